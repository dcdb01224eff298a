"""``hudisql serve``: the command line of the PostgreSQL-protocol server.

``hudisql serve [--host 127.0.0.1] [--port 5433] [--warehouse DIR] [--catalog URL]
[--conf k=v] [--users FILE] [--tls-cert PEM --tls-key PEM [--tls-required]] [--read-only]``
serves until Ctrl-C. ``hudisql serve --add-user NAME --users FILE [--role readonly]`` adds a
user to a users file (the password is read from the terminal, or from stdin when piped).
"""

from __future__ import annotations

import argparse
import getpass
import sys
from collections.abc import Sequence

from hudisql.errors import HudiSqlError


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """The command line; exits with status 2 on bad arguments."""
    parser = argparse.ArgumentParser(
        prog="hudisql serve",
        description="Serve hudisql to BI and SQL tools over the PostgreSQL protocol.")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (other than loopback needs --users)")
    parser.add_argument("--port", type=int, default=5433)
    parser.add_argument("--warehouse", help="the directory of managed tables")
    parser.add_argument("--catalog", help="catalog URL (sqlite:///..., postgresql://...) or name")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark or hoodie.* setting (repeatable)")
    parser.add_argument("--users", metavar="FILE", help="users file (SCRAM-SHA-256)")
    parser.add_argument("--tls-cert", metavar="PEM", help="TLS certificate chain")
    parser.add_argument("--tls-key", metavar="PEM", help="TLS private key")
    parser.add_argument("--tls-required", action="store_true",
                        help="refuse clients that do not start TLS")
    parser.add_argument("--read-only", action="store_true",
                        help="every user may only read (queries, SHOW, DESCRIBE)")
    parser.add_argument("--max-message-bytes", type=int, default=16 << 20,
                        help="longest message (query text) accepted, in bytes")
    parser.add_argument("--add-user", metavar="NAME",
                        help="add NAME to the --users file and exit")
    parser.add_argument("--role", choices=["readwrite", "readonly"], default="readwrite",
                        help="the role of --add-user's user")
    args = parser.parse_args(argv)
    from hudisql.cli import conf_settings

    args.conf = conf_settings(parser, args.conf)
    if args.add_user and not args.users:
        parser.error("--add-user needs --users FILE")
    if bool(args.tls_cert) != bool(args.tls_key):
        parser.error("--tls-cert and --tls-key go together")
    return args


def main(argv: Sequence[str]) -> int:
    """Run ``hudisql serve``; returns the exit status (1: refused to start)."""
    args = parse_args(argv)
    from hudisql.server.auth import add_user

    if args.add_user:
        if sys.stdin.isatty():
            password = getpass.getpass(f"password for {args.add_user}: ")
        else:
            password = sys.stdin.readline().rstrip("\n")
        if not password:
            print("Error: an empty password", file=sys.stderr)
            return 1
        add_user(args.users, args.add_user, password, args.role)
        print(f"{args.users}: user {args.add_user} ({args.role})", file=sys.stderr)
        return 0
    from hudisql.cli import quiet_spark_error_logs
    from hudisql.server import PgServer, ServerConfig

    config = ServerConfig(
        host=args.host, port=args.port, warehouse=args.warehouse, catalog=args.catalog,
        conf={"hudisql.log.level": "ERROR", **args.conf}, users_file=args.users,
        tls_cert=args.tls_cert, tls_key=args.tls_key, tls_required=args.tls_required,
        read_only=args.read_only, max_message_bytes=args.max_message_bytes)
    try:
        server = PgServer(config)
        quiet_spark_error_logs()
        server.start()
    except (HudiSqlError, OSError) as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    print(f"hudisql serve: listening on {args.host}:{server.port} "
          f"({'TLS, ' if args.tls_cert else ''}"
          f"{'SCRAM-SHA-256' if args.users else 'no password: loopback only'}); "
          "Ctrl-C stops", file=sys.stderr, flush=True)
    server.serve_forever()
    return 0
