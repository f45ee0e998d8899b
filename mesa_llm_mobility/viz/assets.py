"""Solara's front-end assets from the npm registry, so apps open with no CDN in reach.

A Solara page loads its JavaScript and CSS through the server's CDN proxy: the browser asks
``/_solara/cdn/<npm package>@<version>/<file>`` and the server answers from its proxy cache
(``solara.server.settings.assets.proxy_cache_dir``; default ``<sys.prefix>/share/solara/cdn``,
environment variable ``SOLARA_ASSETS_PROXY_CACHE_DIR``) or fetches the file from jsDelivr. Where
jsDelivr is out of reach the page stays on "Loading app". The files are the contents of npm
packages, though, and the npm registry is often reachable where a CDN is not (a company mirror,
a sandbox). So:

* :func:`cdn_packages` reads the installed Solara (and Mesa) package files and lists the
  ``name@version`` packages the front end asks the proxy for;
* :func:`install_assets` downloads each package's tarball from the registry (``$NPM_CONFIG_REGISTRY``
  or https://registry.npmjs.org/), checks its integrity hash and unpacks it into the proxy cache
  at ``<cache>/<name>@<version>/``, where the server finds every file it would have fetched.

From a shell, ``mlm viz install-assets`` does both (``--list`` only lists). From Python::

    from mesa_llm_mobility.viz.assets import install_assets

    install_assets()  # into Solara's cache, once per Solara version

Nothing here touches the network or Solara's settings on import. Solara also reports usage to
Mixpanel unless told not to, and the first page it serves in development mode (how ``solara run``
starts) embeds an install check that loads ``https://solara.dev/static/public/success.html``;
:func:`keep_solara_offline` stops both, for apps that make no request to any other host.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import io
import json
import logging
import os
import re
import secrets
import shutil
import site
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

logger = logging.getLogger(__name__)

DEFAULT_REGISTRY = "https://registry.npmjs.org/"
MARKER_NAME = ".mlm-install.json"
"""The file, inside an installed package's folder, that records a complete installation."""

INSTALLED = "installed"
ALREADY_PRESENT = "already present"

_SCANNED_SUFFIXES = frozenset({".j2", ".html", ".vue", ".py", ".js"})
_NAME = r"(?:@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*"
_EXACT_VERSION = r"\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?"
# ``{{cdn}}/pkg@1.2.3/`` in Jinja templates, ``${this.getCdn()}/pkg@1.2.3/`` in Vue components and
# a quoted ``"/pkg@1.2.3/..."`` path in Python settings (Font Awesome). Only exact versions: a
# range (``vega@5``) is resolved by the CDN at fetch time, so callers who need one pass it as
# ``extra``. Absolute ``https://cdn.jsdelivr.net/...`` URLs bypass the proxy and are not matched.
_CDN_REFERENCE = re.compile(
    r"(?:\{\{\s*cdn\s*\}\}|\$\{\s*this\.getCdn\(\)\s*\}|[\"'`])"
    r"/(?P<name>" + _NAME + r")@(?P<version>" + _EXACT_VERSION + r")/"
    r"(?P<file>[^\"'`\s{}$?#]*)"
)
# jsDelivr minifies on request: ``require.min.js`` exists there though the package has only
# ``require.js``, and solara.Markdown asks for it
_MINIFIED = re.compile(r"(?P<stem>.+)\.min\.(?P<suffix>js|css)")
_VERSION_OR_RANGE = re.compile(r"[0-9A-Za-z][0-9A-Za-z.+-]*")
_SRI_ALGORITHMS = ("sha1", "sha256", "sha384", "sha512")  # weakest first
_HTTP_TIMEOUT_S = 60.0
_RETRY_DELAYS_S = (1.0, 3.0)  # three attempts in all
_ABBREVIATED_METADATA = (
    "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8"
)


class AssetInstallError(RuntimeError):
    """A package could not be downloaded, verified or unpacked; the message names it and the URL."""


@dataclass(frozen=True, order=True)
class NpmPackage:
    """An npm package at one version, as the front end asks the CDN for it.

    Attributes:
        name: The npm name, scoped (``@widgetti/solara-vuetify-app``) or not (``requirejs``).
        version: An exact version (``10.1.1``), or for :attr:`extra <cdn_packages>` packages a
            dist-tag (``latest``) or a version prefix (``5``, ``5.2``) as jsDelivr accepts it.
    """

    name: str
    version: str

    def __post_init__(self) -> None:
        """Reject names and versions that are not npm's, since both become folder names."""
        if not re.fullmatch(_NAME, self.name):
            raise ValueError(f"not an npm package name: {self.name!r}")
        if not _VERSION_OR_RANGE.fullmatch(self.version):
            raise ValueError(f"not an npm version for {self.name}: {self.version!r}")

    @property
    def spec(self) -> str:
        """``name@version``, which is also the package's folder in the cache."""
        return f"{self.name}@{self.version}"


@dataclass(frozen=True)
class InstalledPackage:
    """One package in the cache after :func:`install_assets`.

    Attributes:
        package: The package as requested.
        version: The exact version unpacked (differs from ``package.version`` for a range).
        path: The package's folder, ``<cache>/<name>@<requested version>``.
        files: Files unpacked.
        size_bytes: Their total size.
        status: ``"installed"`` by this call, or ``"already present"`` from an earlier one.
    """

    package: NpmPackage
    version: str
    path: Path
    files: int
    size_bytes: int
    status: str


def default_registry() -> str:
    """The npm registry: ``$NPM_CONFIG_REGISTRY`` (or ``$npm_config_registry``), else npmjs.org."""
    for key in ("NPM_CONFIG_REGISTRY", "npm_config_registry"):
        if os.environ.get(key):
            return os.environ[key]
    return DEFAULT_REGISTRY


def default_cache_dir() -> Path:
    """Solara's CDN proxy cache, found as Solara finds it but without importing its settings.

    Importing ``solara.server.settings`` creates folders, so this follows its rule instead: the
    live setting if the server's settings are already imported, else
    ``$SOLARA_ASSETS_PROXY_CACHE_DIR``, else ``<prefix>/share/solara/cdn`` where the prefix is
    the user base for a ``pip install --user`` Solara and ``sys.prefix`` otherwise.
    """
    settings = sys.modules.get("solara.server.settings")
    if settings is not None:
        return Path(settings.assets.proxy_cache_dir)
    for key, value in os.environ.items():
        if key.upper() == "SOLARA_ASSETS_PROXY_CACHE_DIR" and value:
            return Path(value)
    spec = importlib.util.find_spec("solara")
    origin = (spec.origin or "") if spec is not None else ""
    userbase = site.getuserbase()
    prefix = userbase if userbase and origin.startswith(userbase) else sys.prefix
    return Path(prefix) / "share" / "solara" / "cdn"


def keep_solara_offline() -> None:
    """Make a Solara app request nothing from any host but its own server.

    * Usage data: sets ``SOLARA_TELEMETRY_MIXPANEL_ENABLE=False`` for settings read later and
      switches the setting off in ``solara.server.settings`` if that is already imported.
    * The install check: Solara embeds it (an iframe to solara.dev, in the page template and as
      a widget) until it finds its own flag files ``.solara_checked`` and ``.jupyter_checked``
      in Solara's home (``$SOLARA_HOME``, else ``~/.solara``); they are written here, as
      Solara writes them after a check. Where they cannot be written, Solara skips the check
      by itself.

    Call it where the app module is loaded (``examples/*_app.py``), not at import of a library.
    """
    os.environ["SOLARA_TELEMETRY_MIXPANEL_ENABLE"] = "False"
    settings = sys.modules.get("solara.server.settings")
    if settings is not None:
        settings.telemetry.mixpanel_enable = False
    from solara import checks  # noqa: PLC0415 - Solara is only needed by apps

    for flag in (checks.solara_checked_path, checks.jupyter_checked_path):
        try:
            flag.parent.mkdir(parents=True, exist_ok=True)
            flag.touch(exist_ok=True)
        except OSError:
            continue


def _package_dir(module: str) -> Path | None:
    spec = importlib.util.find_spec(module)  # finds without importing
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def cdn_packages(
    roots: Iterable[str | os.PathLike[str]] | None = None,
    extra: Iterable[NpmPackage] = (),
) -> list[NpmPackage]:
    """The npm packages that the installed Solara front end asks its CDN proxy for.

    Scans the ``*.j2``, ``*.html``, ``*.vue``, ``*.py`` and ``*.js`` files under ``roots`` for
    proxy references with an exact version: ``{{cdn}}/<name>@<version>/`` (page templates),
    ``${this.getCdn()}/<name>@<version>/`` (Vue components) and quoted ``"/<name>@<version>/"``
    paths (settings such as Font Awesome's). Because it reads the installed files, the list
    follows Solara upgrades. It includes packages that only some components load (KaTeX and
    Mermaid for ``solara.Markdown``); references through a variable (``echarts@${version}``)
    or a range (``vega@5``, for Altair charts) cannot be read off and are left to ``extra``.

    Args:
        roots: Folders to scan; by default the installed ``solara`` and ``mesa`` packages.
        extra: Packages to add, e.g. ``NpmPackage("vega", "5")`` for an app with Altair charts.

    Returns:
        The packages, sorted and without repeats.
    """
    return sorted(set(_cdn_references(roots)) | set(extra))


def _cdn_references(
    roots: Iterable[str | os.PathLike[str]] | None = None,
) -> dict[NpmPackage, set[str]]:
    """Each package the files under ``roots`` ask the CDN for, with the files asked for."""
    if roots is None:
        roots = [path for path in map(_package_dir, ("solara", "mesa")) if path]
    fontawesome = os.environ.get("SOLARA_ASSETS_FONTAWESOME_PATH")
    texts = (
        [("$SOLARA_ASSETS_FONTAWESOME_PATH", f'"{fontawesome}"')] if fontawesome else []
    )
    for root in map(Path, roots):
        for path in sorted(root.rglob("*")):
            if path.suffix in _SCANNED_SUFFIXES and path.is_file():
                texts.append(
                    (str(path), path.read_text(encoding="utf-8", errors="ignore"))
                )
    found: dict[NpmPackage, set[str]] = {}
    for source, text in texts:
        for match in _CDN_REFERENCE.finditer(text):
            package = NpmPackage(match["name"], match["version"])
            if package not in found:
                logger.debug("%s asks the CDN for %s", source, package.spec)
            found.setdefault(package, set()).add(match["file"])
    return found


def install_assets(
    cache_dir: str | os.PathLike[str] | None = None,
    registry: str | None = None,
    packages: Sequence[NpmPackage] | None = None,
    force: bool = False,
) -> list[InstalledPackage]:
    """Download npm packages from the registry and unpack them into Solara's CDN proxy cache.

    Each package lands in ``<cache_dir>/<name>@<version>/`` (its tarball's ``package/`` folder),
    the path at which Solara's server looks for the files before it tries the CDN. The tarball
    must match the registry's ``dist.integrity`` hash (or, for old packages, ``dist.shasum``);
    members that would land outside the folder (absolute paths, ``..``, links) are refused before
    anything is written. A package is unpacked into a temporary folder that is renamed into place,
    with a marker file, so a later call skips it and a broken download never leaves half a package.
    Where the installed Solara asks for a ``.min.js`` or ``.min.css`` file that the package lacks
    (jsDelivr minifies on request), the unminified file is copied to that name.

    Args:
        cache_dir: The cache folder; by default Solara's (:func:`default_cache_dir`).
        registry: The npm registry URL; by default :func:`default_registry`.
        packages: What to install; by default :func:`cdn_packages`.
        force: Download and unpack again packages already in the cache.

    Returns:
        One record per package, in the order of ``packages``.

    Raises:
        AssetInstallError: A download failed, a hash did not match or a tarball was unsafe. The
            message names the package and the URL. Packages installed before it stay installed.
    """
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    registry_url = (registry or default_registry()).rstrip("/")
    referenced = _cdn_references()
    if packages is None:
        packages = sorted(referenced)
    return [
        _install_package(
            package, cache, registry_url, force, referenced.get(package, set())
        )
        for package in packages
    ]


def _install_package(
    package: NpmPackage,
    cache: Path,
    registry: str,
    force: bool,
    referenced_files: set[str],
) -> InstalledPackage:
    target = cache / package.spec
    marker = target / MARKER_NAME
    if marker.is_file() and not force:
        record = json.loads(marker.read_text(encoding="utf-8"))
        logger.info("%s is already in %s", package.spec, target)
        return InstalledPackage(
            package,
            record["version"],
            target,
            record["files"],
            record["size_bytes"],
            ALREADY_PRESENT,
        )
    metadata = _version_metadata(package, registry)
    dist = metadata.get("dist") or {}
    tarball_url = dist.get("tarball")
    if not tarball_url:
        raise AssetInstallError(
            f"{package.spec}: the registry metadata names no tarball (dist.tarball)"
        )
    started = time.perf_counter()
    data = _http_get(tarball_url, package)
    _verify(data, dist, package, tarball_url)
    files, size_bytes = _unpack(
        data,
        package,
        tarball_url,
        target,
        referenced_files,
        {
            "name": package.name,
            "requested": package.version,
            "version": metadata.get("version", package.version),
            "tarball": tarball_url,
            "integrity": dist.get("integrity") or f"sha1:{dist.get('shasum')}",
        },
    )
    logger.info(
        "installed %s: %d files, %.1f MB in %.1f s into %s",
        package.spec,
        files,
        size_bytes / 1e6,
        time.perf_counter() - started,
        target,
    )
    return InstalledPackage(
        package,
        metadata.get("version", package.version),
        target,
        files,
        size_bytes,
        INSTALLED,
    )


def _version_metadata(package: NpmPackage, registry: str) -> dict:
    """The registry's metadata for the package's version (a range resolves to its newest match)."""
    escaped = package.name.replace("/", "%2f")
    if re.fullmatch(_EXACT_VERSION, package.version):
        url = f"{registry}/{escaped}/{package.version}"
        return _json(_http_get(url, package), package, url)
    url = f"{registry}/{escaped}"
    document = _json(
        _http_get(url, package, accept=_ABBREVIATED_METADATA), package, url
    )
    versions = document.get("versions") or {}
    tagged = (document.get("dist-tags") or {}).get(package.version)
    if tagged in versions:
        return versions[tagged]
    prefix = package.version + "."
    matching = [
        version
        for version in versions
        if version.startswith(prefix) and re.fullmatch(r"\d+\.\d+\.\d+", version)
    ]
    if not matching:
        raise AssetInstallError(
            f"{package.spec}: no released version matches {package.version!r} at {url}"
        )
    newest = max(matching, key=lambda version: tuple(map(int, version.split("."))))
    return versions[newest]


def _json(data: bytes, package: NpmPackage, url: str) -> dict:
    try:
        document = json.loads(data)
    except ValueError as error:
        raise AssetInstallError(
            f"{package.spec}: {url} did not answer JSON ({error})"
        ) from None
    if not isinstance(document, dict):
        raise AssetInstallError(f"{package.spec}: {url} did not answer a JSON object")
    return document


def _http_get(url: str, package: NpmPackage, accept: str | None = None) -> bytes:
    """GET with a timeout; server errors and broken connections are retried, 4xx are not."""
    if not url.startswith(("http://", "https://")):
        raise AssetInstallError(f"{package.spec}: not an HTTP(S) URL: {url}")
    headers = {"Accept": accept} if accept else {}
    request = urllib.request.Request(url, headers=headers)  # noqa: S310  (scheme checked above)
    problem = ""
    for attempt, delay in enumerate((0.0, *_RETRY_DELAYS_S)):
        if attempt:
            logger.warning(
                "GET %s failed (%s); retrying in %.0f s", url, problem, delay
            )
            time.sleep(delay)
        try:
            with urllib.request.urlopen(request, timeout=_HTTP_TIMEOUT_S) as response:  # noqa: S310
                return response.read()
        except urllib.error.HTTPError as error:
            if error.code < 500 and error.code != 429:
                raise AssetInstallError(
                    f"{package.spec}: HTTP {error.code} {error.reason} from {url}"
                ) from None
            problem = f"HTTP {error.code} {error.reason}"
        except (urllib.error.URLError, OSError) as error:
            problem = str(getattr(error, "reason", error))
    raise AssetInstallError(
        f"{package.spec}: could not GET {url} after {1 + len(_RETRY_DELAYS_S)} attempts ({problem})"
    )


def _verify(data: bytes, dist: dict, package: NpmPackage, url: str) -> None:
    """Check the tarball against the strongest Subresource-Integrity hash, else ``shasum``."""
    expected: dict[str, set[str]] = {}
    for token in str(dist.get("integrity") or "").split():
        algorithm, _, digest = token.partition("-")
        if algorithm in _SRI_ALGORITHMS:
            expected.setdefault(algorithm, set()).add(digest.split("?")[0])
    if expected:
        algorithm = max(expected, key=_SRI_ALGORITHMS.index)
        actual = base64.b64encode(hashlib.new(algorithm, data).digest()).decode()
        if actual not in expected[algorithm]:
            raise AssetInstallError(
                f"{package.spec}: integrity mismatch for {url} "
                f"(expected {algorithm}-{sorted(expected[algorithm])[0]}, got {algorithm}-{actual})"
            )
        return
    shasum = dist.get("shasum")
    if shasum:
        # npm's legacy checksum, used only when the registry gives no integrity string
        actual = hashlib.sha1(data, usedforsecurity=False).hexdigest()
        if actual != str(shasum).lower():
            raise AssetInstallError(
                f"{package.spec}: shasum mismatch for {url} (expected {shasum}, got {actual})"
            )
        return
    raise AssetInstallError(
        f"{package.spec}: the registry gives no integrity hash for {url}; not installing it unverified"
    )


def _safe_members(
    archive: tarfile.TarFile, package: NpmPackage, url: str, staging: Path
) -> list[tarfile.TarInfo]:
    """The archive's members with npm's top folder (``package/``) stripped, all checked safe."""
    members = []
    for member in archive.getmembers():
        parts = PurePosixPath(member.name).parts
        if member.name.startswith("/") or ".." in parts:
            raise AssetInstallError(
                f"{package.spec}: unsafe member {member.name!r} in {url}"
            )
        inner = "/".join(parts[1:])
        if not inner:
            continue
        changes = {"name": inner}
        if (
            member.islnk()
        ):  # hard links name an archive member, which has the top folder too
            changes["linkname"] = "/".join(PurePosixPath(member.linkname).parts[1:])
        stripped = member.replace(**changes, deep=False)
        try:
            tarfile.data_filter(stripped, str(staging))
        except tarfile.FilterError as error:
            raise AssetInstallError(
                f"{package.spec}: unsafe member {member.name!r} in {url} ({error})"
            ) from None
        members.append(stripped)
    return members


def _unpack(
    data: bytes,
    package: NpmPackage,
    url: str,
    target: Path,
    referenced_files: set[str],
    record: dict,
) -> tuple[int, int]:
    """Unpack into a temporary sibling of ``target`` and rename it into place."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".mlm-unpack-", dir=target.parent))
    try:
        try:
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as archive:
                members = _safe_members(archive, package, url, staging)
                archive.extractall(staging, members=members, filter="data")
        except tarfile.TarError as error:
            raise AssetInstallError(
                f"{package.spec}: cannot unpack {url} ({error})"
            ) from None
        _add_minified_copies(staging, referenced_files, package)
        unpacked = [path for path in staging.rglob("*") if path.is_file()]
        files, size_bytes = len(unpacked), sum(path.stat().st_size for path in unpacked)
        record |= {"files": files, "size_bytes": size_bytes}
        (staging / MARKER_NAME).write_text(
            json.dumps(record, indent=2), encoding="utf-8"
        )
        staging.chmod(
            0o755
        )  # mkdtemp's 0700 would hide the files from a server run by another user
        _replace(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return files, size_bytes


def _add_minified_copies(
    folder: Path, referenced_files: set[str], package: NpmPackage
) -> None:
    """Serve the unminified file where Solara asks for a ``.min`` one the package lacks."""
    for name in sorted(referenced_files):
        minified = _MINIFIED.fullmatch(name)
        if minified is None or ".." in PurePosixPath(name).parts:
            continue
        source = folder / f"{minified['stem']}.{minified['suffix']}"
        if not (folder / name).exists() and source.is_file():
            logger.info("%s has no %s; copying %s", package.spec, name, source.name)
            shutil.copyfile(source, folder / name)


def _replace(staging: Path, target: Path) -> None:
    if not (target.exists() or target.is_symlink()):
        staging.rename(target)
        return
    # an earlier install, or files Solara's proxy cached one at a time: move aside, then delete
    old = target.with_name(f".{target.name}.old-{secrets.token_hex(4)}")
    target.rename(old)
    staging.rename(target)
    if old.is_symlink() or old.is_file():
        old.unlink()
    else:
        shutil.rmtree(old, ignore_errors=True)
