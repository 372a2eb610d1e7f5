// Filter the host table as you type; the form still works without script.
document.addEventListener("DOMContentLoaded", () => {
  const box = document.getElementById("search");
  const rows = document.querySelectorAll("tr.host");
  const shown = document.getElementById("shown");
  if (!box || !rows.length) return;
  box.addEventListener("input", () => {
    const wanted = box.value.trim().toLowerCase();
    let count = 0;
    rows.forEach((row) => {
      const match = !wanted || row.dataset.name.includes(wanted) || row.dataset.uuid.includes(wanted);
      row.hidden = !match;
      if (match) count += 1;
    });
    if (shown) shown.textContent = String(count);
  });
});
