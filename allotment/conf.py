"""Configuration: upstream Placement's option groups and names, via oslo.config.

An operator's existing ``placement.conf`` loads unchanged: the same groups
(``[api]``, ``[placement_database]``, ``[placement]``, ``[oslo_policy]``,
``[cors]``, ``[keystone_authtoken]``, ``[workarounds]``) and the same lookup
(``--config-file`` or ``placement.conf`` inside ``OS_PLACEMENT_CONFIG_DIR``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from oslo_config import cfg
from oslo_log import log as oslo_log
from oslo_middleware import cors, http_proxy_to_wsgi, sizelimit
from oslo_policy import opts as policy_opts

from allotment import __version__

CONFIG_FILE = "placement.conf"
DEFAULT_CONSUMER_MISSING_ID = "00000000-0000-0000-0000-000000000000"
# The embedded default: a file in the working directory, so `allotment-api`
# works with no configuration at all.
DEFAULT_SQLITE_PATH = "allotment.sqlite"

api_opts = [
    cfg.StrOpt(
        "auth_strategy",
        default="keystone",
        choices=("keystone", "noauth2"),
        deprecated_group="DEFAULT",
        help="Authentication strategy: keystone, or noauth2 for testing "
        "(the token 'admin' gets the admin role).",
    ),
]

database_opts = [
    cfg.StrOpt(
        "connection",
        secret=True,
        help="SQLAlchemy URL of the database. Unset means an embedded SQLite "
        f"file '{DEFAULT_SQLITE_PATH}' in the working directory.",
    ),
    cfg.StrOpt("connection_parameters", default="",
               help="Extra query parameters appended to the connection URL."),
    cfg.BoolOpt("sqlite_synchronous", default=True,
                help="If False, SQLite runs with synchronous=OFF."),
    cfg.StrOpt("slave_connection", secret=True,
               help="Accepted for compatibility; not used."),
    cfg.StrOpt("mysql_sql_mode", default="TRADITIONAL",
               help="SQL mode for MySQL sessions."),
    cfg.IntOpt("connection_recycle_time", default=3600,
               help="Seconds after which pooled connections are recycled."),
    cfg.IntOpt("max_pool_size", help="Connection pool size."),
    cfg.IntOpt("max_retries", default=10,
               help="Connection attempts at start-up (-1 forever)."),
    cfg.IntOpt("retry_interval", default=10,
               help="Seconds between connection attempts at start-up."),
    cfg.IntOpt("max_overflow", help="Connections allowed above the pool size."),
    cfg.IntOpt("connection_debug", default=0,
               help="0 none, 100 log every SQL statement."),
    cfg.BoolOpt("connection_trace", default=False,
                help="Accepted for compatibility; not used."),
    cfg.IntOpt("pool_timeout", help="Seconds to wait for a pooled connection."),
    cfg.BoolOpt("sync_on_startup", default=False,
                help="Apply schema migrations when the web service starts. "
                "The embedded SQLite default always does."),
]

placement_opts = [
    cfg.BoolOpt("randomize_allocation_candidates", default=False,
                help="Return allocation candidates in random order."),
    cfg.StrOpt("incomplete_consumer_project_id",
               default=DEFAULT_CONSUMER_MISSING_ID,
               help="Project for allocations written before microversion 1.8."),
    cfg.StrOpt("incomplete_consumer_user_id",
               default=DEFAULT_CONSUMER_MISSING_ID,
               help="User for allocations written before microversion 1.8."),
    cfg.IntOpt("allocation_conflict_retry_count", default=10,
               help="Server-side retries of an allocation write that lost a "
               "generation race before answering 409."),
    cfg.IntOpt("max_allocation_candidates", default=-1,
               help="Upper bound on candidates generated per request "
               "(-1: unbounded)."),
    cfg.StrOpt("allocation_candidates_generation_strategy",
               default="depth-first",
               choices=("depth-first", "breadth-first"),
               help="Order candidates across root providers."),
]

# Bounds on what one request may ask for, so that no request, however
# malformed or hostile, can pin a worker or exhaust its memory.  The
# defaults are far above anything a scheduler or a driver sends.
request_bound_opts = [
    cfg.IntOpt("max_query_string_length", default=8192, min=256,
               help="Longest query string accepted, in bytes as sent "
               "(percent-encoded). Longer ones are refused with 414."),
    cfg.IntOpt("max_query_parameters", default=1000, min=16,
               help="Most key=value pairs accepted in one query string; more "
               "are refused with 400."),
    cfg.IntOpt("max_json_depth", default=32, min=8,
               help="Deepest nesting of arrays and objects accepted in a JSON "
               "body; deeper documents are refused with 400."),
    cfg.IntOpt("max_request_groups", default=128, min=1,
               help="Most request groups (the unsuffixed one and each "
               "resources/required/member_of/in_tree suffix) accepted in one "
               "query; more are refused with 400."),
    cfg.IntOpt("max_any_of_members", default=256, min=1,
               help="Most members of one 'in:' list (required=in:... or "
               "member_of=in:...); more are refused with 400."),
]

# Options of our own, for what upstream Placement does not have.
allotment_opts = [
    cfg.BoolOpt("rotate_allocation_candidates", default=False,
                help="Start a limited allocation candidates answer's rounds (one "
                "candidate per host in turn) at a host that moves on with every "
                "write, instead of the first host in UUID order, so that "
                "schedulers asking one after another get different first hosts. "
                "An answer stays a function of the world and the request. For "
                "answers kept host by host (no sharing provider in the world, "
                "microversion 1.29 or later, max_allocation_candidates unset); "
                "randomize_allocation_candidates takes precedence."),
    cfg.IntOpt("change_feed_retention", default=3600, min=60,
               help="Seconds the change feed keeps what writes changed. An API "
               "process that has not looked at the feed for longer (an idle "
               "one) reloads its whole in-memory world on its next request."),
    cfg.IntOpt("database_connect_timeout", default=10, min=1,
               help="Seconds to wait for a connection to the PostgreSQL or MySQL "
               "server before answering 503."),
    cfg.IntOpt("database_statement_timeout", default=60, min=0,
               help="Seconds one SQL statement (lock waits included) may run on "
               "PostgreSQL or MySQL before the database cancels it and the "
               "request is answered 503; 0 for no limit."),
    *request_bound_opts,
    cfg.IntOpt("client_timeout", default=30, min=1,
               help="allotment-api only: seconds a client has, from the moment "
               "its connection is accepted, to send its whole request, and "
               "again to take the whole response. A slower client is "
               "disconnected, so it cannot hold a worker."),
    cfg.BoolOpt("shared_world", default=True,
                help="allotment-api only: build the provider world once, in the "
                "server's main process, before its workers start. Each worker, "
                "and each worker started later in place of one that exited, "
                "begins from that world (brought up to date just before it "
                "starts, and shared with the main process until either changes "
                "it) and reads only the change feed after it, instead of "
                "reading the whole world itself. The main process holds one "
                "more copy of the world."),
    cfg.StrOpt("metrics_bind", default="",
               help="allotment-api only: a second HOST:PORT on which GET /metrics "
               "and GET /healthcheck are served without credentials (and "
               "nothing else). When set, /metrics is not served on the API's "
               "own address. Bind it to an address only the monitoring system "
               "reaches."),
    cfg.BoolOpt("metrics_consumer_allocations", default=False,
                help="Export openstack_placement_resource_provider_allocations "
                "(one series per consumer, provider and class) on /metrics. "
                "Read from the database in one query per scrape; off by "
                "default because its series grow with the number of "
                "consumers."),
    cfg.IntOpt("audit_metrics_interval", default=300, min=0,
               help="Seconds between runs of the consistency audit whose "
               "findings /metrics exports (allotment_audit_*); the audit reads "
               "every allocation, so a scrape runs it at most this often. 0 "
               "exports no audit series."),
    cfg.MultiStrOpt("capacity_flavors", default=[],
                    help="A named request whose headroom /metrics exports, as "
                    "NAME=QUERY where QUERY is a GET /allocation_candidates query "
                    "string (e.g. 'm1.small=resources=VCPU:1,MEMORY_MB:2048,DISK_GB:20'"
                    "). Repeat for each flavor."),
    cfg.ListOpt("capacity_private_flavors", default=[],
                help="Names among capacity_flavors exported with public=\"False\"."),
    cfg.ListOpt("preemptible_consumer_types", default=[],
                help="Consumer types (microversion 1.38's consumer_type) whose "
                "consumers GET /allocation_candidates?preempt=true may offer to "
                "remove to make room (docs/extensions/preempt.md). Empty: none."),
    cfg.BoolOpt("capacity_metrics_per_host", default=False,
                help="Also export openstack_free_capacity_hypervisor_by_flavor, one "
                "series per host with room and flavor (many series on a large cloud)."),
]

# Placement itself sets no limit; oslo.middleware's option of the same name
# and group bounds request bodies here.  Its 112 KiB default is raised, since
# a reshape of a big host carries every allocation on it.
body_size_opts = [
    cfg.IntOpt(opt.name, default=1024 * 1024, min=1024, help=opt.help +
               " Larger bodies are refused with 413.")
    for opt in sizelimit.OPTS
]

workaround_opts = [
    cfg.BoolOpt("optimize_for_wide_provider_trees", default=False,
                help="Accepted for compatibility; candidate generation is "
                "always lazy here."),
]

base_opts = [
    cfg.StrOpt("tempdir", help="Explicit temporary working directory."),
    cfg.StrOpt("state_path", default="$pybasedir",
               help="Top-level directory for state."),
    cfg.StrOpt("pybasedir", default=os.path.abspath(
        os.path.join(os.path.dirname(__file__), "..")),
        help="Directory of the installed package."),
]

CORS_DEFAULTS: Mapping[str, Sequence[str]] = {
    "allow_headers": [
        "X-Auth-Token", "X-Openstack-Request-Id", "X-Identity-Status",
        "X-Roles", "X-Service-Catalog", "X-User-Id", "X-Tenant-Id",
        "OpenStack-API-Version",
    ],
    "expose_headers": [
        "X-Auth-Token", "X-Openstack-Request-Id", "X-Subject-Token",
        "X-Service-Token", "OpenStack-API-Version",
    ],
    "allow_methods": ["GET", "PUT", "POST", "DELETE", "PATCH"],
}


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(api_opts, group="api")
    conf.register_opts(database_opts, group="placement_database")
    conf.register_opts(placement_opts, group="placement")
    conf.register_opts(workaround_opts, group="workarounds")
    conf.register_opts(allotment_opts, group="allotment")
    conf.register_opts(base_opts)
    conf.register_opts(cors.CORS_OPTS, "cors")
    conf.register_opts(http_proxy_to_wsgi.OPTS, "oslo_middleware")
    conf.register_opts(body_size_opts, "oslo_middleware")
    policy_opts.set_defaults(conf)
    cors.set_defaults(**CORS_DEFAULTS)
    oslo_log.register_options(conf)


def default_config_files(env: Mapping[str, str] | None = None) -> list[str] | None:
    """Where upstream looks: ``$OS_PLACEMENT_CONFIG_DIR/placement.conf``.

    None lets oslo.config search its usual places (~/.placement, /etc/placement).
    """
    env = os.environ if env is None else env
    dirname = env.get("OS_PLACEMENT_CONFIG_DIR", "").strip()
    return [os.path.join(dirname, CONFIG_FILE)] if dirname else None


def load(
    argv: Sequence[str] = (),
    *,
    config_files: Sequence[str] | None = None,
    overrides: Mapping[str, Mapping[str, object]] | None = None,
) -> cfg.ConfigOpts:
    """Build a fresh ConfigOpts (never the global one) from files and overrides.

    ``overrides`` maps group name to option values; tests and the in-process
    client use it to configure without files.
    """
    conf = cfg.ConfigOpts()
    register_opts(conf)
    files = list(config_files) if config_files is not None else default_config_files()
    conf(list(argv), project="placement", version=__version__,
         default_config_files=files)
    if _profiler_configured(conf, overrides):
        register_profiler_opts(conf)
    for group, values in (overrides or {}).items():
        for name, value in values.items():
            conf.set_override(name, value, group=None if group == "DEFAULT" else group)
    return conf


def _profiler_configured(conf: cfg.ConfigOpts,
                         overrides: Mapping[str, Mapping[str, object]] | None) -> bool:
    """Whether anything sets a ``[profiler]`` option: a section of a file,
    an override, or oslo.config's environment variables
    (``OS_PROFILER__ENABLED``)."""
    return ("profiler" in conf.list_all_sections() or "profiler" in (overrides or {})
            or any(name.startswith("OS_PROFILER__") for name in os.environ))


def register_profiler_opts(conf: cfg.ConfigOpts) -> bool:
    """Register osprofiler's ``[profiler]`` options on ``conf``, as upstream
    does when osprofiler is installed; False when it is not.

    :func:`load` calls it only when something sets a ``[profiler]`` option:
    otherwise profiling is off whatever is installed, and
    osprofiler's options import all of its drivers (27 modules, about 1 MB
    resident in every serving process) for nothing.
    """
    try:
        from osprofiler import opts as profiler_opts
    except ImportError:  # pragma: no cover - depends on the environment
        return False
    profiler_opts.set_defaults(conf)
    return True


def list_opts() -> list[tuple[str, list[cfg.Opt]]]:
    """Options for oslo-config-generator."""
    return [
        ("api", api_opts),
        ("placement_database", database_opts),
        ("placement", placement_opts),
        ("workarounds", workaround_opts),
        ("allotment", allotment_opts),
        ("oslo_middleware", body_size_opts),
        ("DEFAULT", base_opts),
    ]
