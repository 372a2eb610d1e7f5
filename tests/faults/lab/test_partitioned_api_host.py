"""An API host cut off from the database by the network (packets dropped,
no reset) must answer 503 within its configured bounds
(``database_connect_timeout`` + ``database_statement_timeout``,
docs/reliability.md guarantee 4) -- not wait for the network to heal.

On PostgreSQL the statement timeout is the server's, and the server never
sees the statement; TCP keepalive only probes idle connections.  So the
connection is given a TCP user timeout as long as the statement timeout
(storage/db.py): data left unacknowledged that long ends the connection,
and the request is a 503.  Without it a 20 s partition held a claim for
26.6 s (answered 204 once the network healed), and a 45 s one left four
requests unanswered after 30 s.
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest
import requests

from tests.faults.lab import net
from tests.faults.lab.history import PROJECT, USER, headers, make_providers

pytestmark = [pytest.mark.xdist_group("faultlab"), pytest.mark.slow]
CONNECT_TIMEOUT, STATEMENT_TIMEOUT = 2, 5  # as api.CONF sets them
PARTITION = 12.0


@pytest.mark.parametrize("backend", ["postgres"])
def test_a_claim_on_a_partitioned_api_host_is_a_prompt_503(postgres_lab, backend):
    lab = postgres_lab
    [provider] = make_providers(lab.client.netns, lab.api_url, 1, 8, tag="partitioned")
    api = lab.apis[0]

    def claim() -> tuple[float, int | None]:
        started = time.monotonic()
        try:
            status = requests.put(f"{api.url}/allocations/{uuid.uuid4()}", headers=headers(),
                                  timeout=PARTITION + 10, json={
                                      "allocations": {provider: {"resources": {"VCPU": 1}}},
                                      "project_id": PROJECT, "user_id": USER,
                                      "consumer_generation": None}).status_code
        except requests.RequestException:
            status = None
        return time.monotonic() - started, status

    # Every worker's pooled connection made and used before the cut.
    for _ in range(6):
        assert net.call_in(lab.client.netns, claim)[1] == 204
    answer: list[tuple[float, int | None]] = []
    asking = threading.Thread(
        target=lambda: answer.append(net.call_in(lab.client.netns, claim, PARTITION + 20)))
    with lab.network.partition(api.host, [lab.proxy_host], direction="out", port=lab.db_port):
        asking.start()
        asking.join(PARTITION)  # the network heals after this, answered or not
    asking.join(PARTITION + 20)
    [(waited, status)] = answer
    assert status == 503 and waited < CONNECT_TIMEOUT + STATEMENT_TIMEOUT + 2, \
        (waited, status)
