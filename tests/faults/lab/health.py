"""The check haproxy asks each database node (``option httpchk``), as
kolla-ansible's clustercheck answers it: 200 when the node may take
writes, 503 otherwise.

A Galera node may when ``wsrep_local_state`` is 4 (Synced); a PostgreSQL
server when it is not in recovery (a primary, or a promoted replica).

    python -m tests.faults.lab.health --port 4569 --mysql-socket PATH
    python -m tests.faults.lab.health --port 4569 --pg-dir DIR --pg-port 5432
"""

from __future__ import annotations

import argparse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def galera_ready(socket_path: str) -> bool:
    import pymysql

    conn = pymysql.connect(unix_socket=socket_path, user="root", connect_timeout=2,
                           read_timeout=2)
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW STATUS LIKE 'wsrep_local_state'")
            row = cur.fetchone()
            return row is not None and row[1] == "4"
    finally:
        conn.close()


def pg_ready(directory: str, port: int) -> bool:
    import psycopg

    with psycopg.connect(host=directory, port=port, user="postgres", dbname="postgres",
                         connect_timeout=2) as conn:
        return conn.execute("SELECT NOT pg_is_in_recovery()").fetchone()[0]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=4569)
    parser.add_argument("--mysql-socket")
    parser.add_argument("--pg-dir")
    parser.add_argument("--pg-port", type=int, default=5432)
    args = parser.parse_args()

    def ready() -> bool:
        try:
            if args.mysql_socket:
                return galera_ready(args.mysql_socket)
            return pg_ready(args.pg_dir, args.pg_port)
        except Exception:  # a node that cannot answer is not ready
            return False

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            ok = ready()
            body = b"ready\n" if ok else b"not ready\n"
            self.send_response(200 if ok else 503)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_OPTIONS = do_GET

        def log_message(self, *args) -> None:
            pass

    ThreadingHTTPServer(("0.0.0.0", args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
