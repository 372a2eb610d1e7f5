"""Pieces the commands share: config loading and logging."""

from __future__ import annotations

import argparse
import logging

from oslo_config import cfg

from allotment import conf as conf_mod


def add_config_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config-file", action="append", dest="config_files", metavar="PATH",
        help="placement.conf to read (repeatable). Default: "
        "$OS_PLACEMENT_CONFIG_DIR/placement.conf, else the usual oslo.config "
        "locations; with none found, built-in defaults (embedded SQLite).")


def load_conf(args: argparse.Namespace) -> cfg.ConfigOpts:
    conf = conf_mod.load(config_files=args.config_files)
    level = logging.DEBUG if conf.debug else logging.INFO
    logging.basicConfig(level=level,
                        format="%(asctime)s %(process)d %(levelname)s %(name)s %(message)s")
    return conf
