"""The read-only web view: hosts with their capacity and usage, and one
page per provider tree.  Server-rendered HTML; the assets ship in the
package, nothing is fetched from elsewhere at run time."""
