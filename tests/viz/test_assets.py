"""Installing Solara's CDN assets, against a local fake npm registry (no network)."""

from __future__ import annotations

import base64
import hashlib
import http.server
import importlib.util
import io
import json
import os
import re
import sys
import tarfile
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from mesa_llm_mobility.cli import main
from mesa_llm_mobility.viz import assets
from mesa_llm_mobility.viz.assets import (
    ALREADY_PRESENT,
    INSTALLED,
    MARKER_NAME,
    AssetInstallError,
    NpmPackage,
    cdn_packages,
    default_cache_dir,
    default_registry,
    install_assets,
    keep_solara_offline,
)

SCOPED = NpmPackage("@acme/widget-app", "1.2.3")
PLAIN = NpmPackage("loader", "2.0.0-beta.1")


def npm_tarball(
    files: dict[str, bytes], symlinks: dict[str, str] | None = None
) -> bytes:
    """A gzipped tarball like ``npm pack`` makes: member names as given (``package/...``)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            archive.addfile(info, io.BytesIO(data))
        for name, target in (symlinks or {}).items():
            info = tarfile.TarInfo(name)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            archive.addfile(info)
    return buffer.getvalue()


def package_files(
    package: NpmPackage, script: bytes = b"main();\n"
) -> dict[str, bytes]:
    manifest = {"name": package.name, "version": package.version}
    return {
        "package/package.json": json.dumps(manifest).encode(),
        "package/dist/main.js": script,
        "package/dist/main.css": b"body {}\n",
    }


class FakeRegistry:
    """An npm registry on 127.0.0.1: version metadata, packuments and tarballs from memory."""

    def __init__(self) -> None:
        self.routes: dict[str, bytes] = {}
        self.requests: list[str] = []
        routes, requests = self.routes, self.requests

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                requests.append(self.path)
                body = routes.get(self.path)
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.thread = threading.Thread(
            target=self.server.serve_forever, args=(0.05,), daemon=True
        )
        self.thread.start()

    def publish(
        self,
        package: NpmPackage,
        tarball: bytes | None = None,
        *,
        integrity: str | None = None,
        shasum_only: bool = False,
    ) -> str:
        """Serve ``package``'s metadata and tarball; returns the tarball's path."""
        tarball = npm_tarball(package_files(package)) if tarball is None else tarball
        escaped = package.name.replace("/", "%2f")
        tarball_path = f"/tarballs/{escaped}-{package.version}.tgz"
        self.routes[tarball_path] = tarball
        dist = {
            "tarball": self.url.rstrip("/") + tarball_path,
            "shasum": hashlib.sha1(tarball).hexdigest(),
        }
        if not shasum_only:
            digest = base64.b64encode(hashlib.sha512(tarball).digest()).decode()
            dist["integrity"] = integrity or f"sha512-{digest}"
        metadata = {"name": package.name, "version": package.version, "dist": dist}
        self.routes[f"/{escaped}/{package.version}"] = json.dumps(metadata).encode()
        return tarball_path

    def tarball_requests(self) -> int:
        return sum(path.startswith("/tarballs/") for path in self.requests)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def registry(monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    fake = FakeRegistry()
    yield fake
    fake.close()


def test_packages_land_where_solaras_proxy_looks(registry, tmp_path):
    registry.publish(SCOPED)
    registry.publish(PLAIN)
    installed = install_assets(
        tmp_path, registry=registry.url, packages=[SCOPED, PLAIN]
    )
    assert (
        tmp_path / "@acme/widget-app@1.2.3/dist/main.js"
    ).read_bytes() == b"main();\n"
    assert (tmp_path / "loader@2.0.0-beta.1/dist/main.js").is_file()
    assert [item.status for item in installed] == [INSTALLED, INSTALLED]
    assert installed[0].path == tmp_path / "@acme/widget-app@1.2.3"
    assert installed[0].files == 3
    assert installed[0].size_bytes == sum(
        len(data) for data in package_files(SCOPED).values()
    )
    # nothing left behind but the packages
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "@acme",
        "loader@2.0.0-beta.1",
    ]


def test_a_second_call_skips_installed_packages(registry, tmp_path):
    registry.publish(SCOPED)
    install_assets(tmp_path, registry=registry.url, packages=[SCOPED])
    again = install_assets(tmp_path, registry=registry.url, packages=[SCOPED])
    assert again[0].status == ALREADY_PRESENT
    assert again[0].files == 3
    assert registry.tarball_requests() == 1


def test_force_downloads_again(registry, tmp_path):
    registry.publish(SCOPED)
    install_assets(tmp_path, registry=registry.url, packages=[SCOPED])
    (tmp_path / "@acme/widget-app@1.2.3/stale.js").write_text("left over")
    registry.publish(SCOPED, npm_tarball(package_files(SCOPED, b"fixed();\n")))
    again = install_assets(
        tmp_path, registry=registry.url, packages=[SCOPED], force=True
    )
    assert again[0].status == INSTALLED
    assert registry.tarball_requests() == 2
    folder = tmp_path / "@acme/widget-app@1.2.3"
    assert (folder / "dist/main.js").read_bytes() == b"fixed();\n"
    assert not (folder / "stale.js").exists()
    assert sorted(path.name for path in (tmp_path / "@acme").iterdir()) == [
        "widget-app@1.2.3"
    ]


def test_files_the_proxy_cached_one_by_one_are_replaced(registry, tmp_path):
    partial = tmp_path / "loader@2.0.0-beta.1/dist/main.js"
    partial.parent.mkdir(parents=True)
    partial.write_bytes(b"main();\n")
    registry.publish(PLAIN)
    installed = install_assets(tmp_path, registry=registry.url, packages=[PLAIN])
    assert installed[0].status == INSTALLED
    assert (tmp_path / "loader@2.0.0-beta.1" / MARKER_NAME).is_file()


def test_a_min_file_the_package_lacks_is_the_unminified_one(
    registry, tmp_path, monkeypatch
):
    # jsDelivr minifies on request; solara.Markdown asks for requirejs's require.min.js
    references = {PLAIN: {"require.min.js", "dist/main.min.js", "dist/main.css"}}
    monkeypatch.setattr(assets, "_cdn_references", lambda: references)
    files = {
        **package_files(PLAIN),
        "package/dist/main.min.js": b"m();",
        "package/require.js": b"r",
    }
    registry.publish(PLAIN, npm_tarball(files))
    installed = install_assets(tmp_path, registry=registry.url, packages=[PLAIN])
    folder = tmp_path / PLAIN.spec
    assert (folder / "require.min.js").read_bytes() == b"r"
    assert (folder / "dist/main.min.js").read_bytes() == b"m();"
    assert installed[0].files == 6


def test_an_integrity_mismatch_names_the_package(registry, tmp_path):
    other = base64.b64encode(hashlib.sha512(b"something else").digest()).decode()
    registry.publish(SCOPED, integrity=f"sha512-{other}")
    with pytest.raises(
        AssetInstallError, match=r"@acme/widget-app@1\.2\.3: integrity mismatch"
    ):
        install_assets(tmp_path, registry=registry.url, packages=[SCOPED])
    assert not (tmp_path / "@acme/widget-app@1.2.3").exists()


def test_shasum_is_checked_when_there_is_no_integrity(registry, tmp_path):
    registry.publish(PLAIN, shasum_only=True)
    assert (
        install_assets(tmp_path, registry=registry.url, packages=[PLAIN])[0].status
        == INSTALLED
    )
    registry.publish(SCOPED, shasum_only=True)
    metadata_path = "/@acme%2fwidget-app/1.2.3"
    metadata = json.loads(registry.routes[metadata_path])
    metadata["dist"]["shasum"] = "0" * 40
    registry.routes[metadata_path] = json.dumps(metadata).encode()
    with pytest.raises(AssetInstallError, match=r"widget-app@1\.2\.3: shasum mismatch"):
        install_assets(tmp_path, registry=registry.url, packages=[SCOPED])


@pytest.mark.parametrize(
    ("files", "symlinks"),
    [
        ({"package/dist/main.js": b"ok", "package/../evil": b"owned"}, None),
        ({"package/dist/main.js": b"ok", "/evil": b"owned"}, None),
        ({"package/dist/main.js": b"ok"}, {"package/dist/evil": "../../../evil"}),
    ],
    ids=["dot-dot", "absolute", "symlink-outside"],
)
def test_unsafe_members_are_refused_and_nothing_is_written(
    registry, tmp_path, files, symlinks
):
    cache = tmp_path / "cache"
    registry.publish(PLAIN, npm_tarball(files, symlinks))
    with pytest.raises(
        AssetInstallError, match=r"loader@2\.0\.0-beta\.1: unsafe member"
    ):
        install_assets(cache, registry=registry.url, packages=[PLAIN])
    assert not list(cache.iterdir())
    assert sorted(path.name for path in tmp_path.iterdir()) == ["cache"]


def test_http_errors_name_the_url(registry, tmp_path):
    missing = NpmPackage("@acme/missing", "1.0.0")
    with pytest.raises(AssetInstallError) as error:
        install_assets(tmp_path, registry=registry.url, packages=[missing])
    message = str(error.value)
    assert "@acme/missing@1.0.0" in message
    assert "HTTP 404" in message
    assert f"{registry.url}@acme%2fmissing/1.0.0" in message


def test_a_version_prefix_installs_the_newest_release_under_the_requested_name(
    registry, tmp_path
):
    for version in ("5.1.0", "5.10.2", "5.11.0-rc.1", "6.0.0"):
        registry.publish(NpmPackage("vega", version))
    registry.routes["/vega"] = json.dumps(
        {
            "name": "vega",
            "dist-tags": {"latest": "6.0.0"},
            "versions": {
                version: json.loads(registry.routes[f"/vega/{version}"])
                for version in ("5.1.0", "5.10.2", "5.11.0-rc.1", "6.0.0")
            },
        }
    ).encode()
    installed = install_assets(
        tmp_path, registry=registry.url, packages=[NpmPackage("vega", "5")]
    )
    assert installed[0].version == "5.10.2"
    assert (
        json.loads((tmp_path / "vega@5/package.json").read_text())["version"]
        == "5.10.2"
    )


def test_package_names_that_are_not_npm_names_are_refused():
    with pytest.raises(ValueError, match="not an npm package name"):
        NpmPackage("../evil", "1.0.0")
    with pytest.raises(ValueError, match="not an npm version"):
        NpmPackage("loader", "1.0.0/../../x")


def _template_versions() -> dict[str, str]:
    """The versions written in the installed Solara's page template, read here independently."""
    solara_dir = Path(importlib.util.find_spec("solara").origin).parent
    template = (solara_dir / "server/templates/solara.html.j2").read_text()
    return dict(re.findall(r"\{\{cdn\}\}/((?:@[\w.-]+/)?[\w.-]+)@([^/]+)/", template))


def test_cdn_packages_finds_what_the_installed_solara_page_loads():
    found = {package.name: package.version for package in cdn_packages()}
    expected = {
        "@widgetti/solara-vuetify-app",
        "@widgetti/solara-vuetify3-app",
        "@widgetti/vue-grid-layout",
        "requirejs",
        "font-awesome",
    }
    assert expected <= set(found)
    for name in expected:
        assert re.fullmatch(r"\d+\.\d+\.\d+(-[\w.]+)?", found[name]), name
    for name, version in _template_versions().items():
        assert found[name] == version


def test_cdn_packages_reads_templates_components_and_settings(tmp_path):
    (tmp_path / "page.html.j2").write_text(
        '<script src="{{ cdn }}/@acme/widget-app@1.2.3/dist/app.js"></script>\n'
        '<script src="{{cdn}}/vega@5/build/vega.js"></script>\n'
        '<script src="https://cdn.jsdelivr.net/npm/absolute@1.0.0/x.js"></script>\n'
    )
    (tmp_path / "widget.vue").write_text(
        "import(`${this.getCdn()}/loader@2.0.0-beta.1/require.js`);\n"
        "import(`${this.getCdn()}/echarts@${version}/dist/echarts.js`);\n"
    )
    (tmp_path / "settings.py").write_text(
        'icons_path: str = "/icons@4.5.0/css/icons.min.css"\n'
    )
    (tmp_path / "notes.md").write_text("{{cdn}}/ignored@1.0.0/x.js\n")
    extra = NpmPackage("vega", "5")
    assert cdn_packages(roots=[tmp_path], extra=[extra]) == sorted(
        [SCOPED, PLAIN, NpmPackage("icons", "4.5.0"), extra]
    )


def test_defaults_follow_the_environment(monkeypatch, tmp_path):
    monkeypatch.delitem(sys.modules, "solara.server.settings", raising=False)
    monkeypatch.delenv("npm_config_registry", raising=False)
    monkeypatch.setenv("NPM_CONFIG_REGISTRY", "http://mirror.example/npm/")
    monkeypatch.setenv("SOLARA_ASSETS_PROXY_CACHE_DIR", str(tmp_path))
    assert default_registry() == "http://mirror.example/npm/"
    assert default_cache_dir() == tmp_path
    monkeypatch.delenv("NPM_CONFIG_REGISTRY")
    monkeypatch.delenv("SOLARA_ASSETS_PROXY_CACHE_DIR")
    assert default_registry() == "https://registry.npmjs.org/"
    assert default_cache_dir().parts[-3:] == ("share", "solara", "cdn")


def test_keep_solara_offline(monkeypatch, tmp_path):
    from solara import checks  # noqa: PLC0415

    settings = SimpleNamespace(telemetry=SimpleNamespace(mixpanel_enable=True))
    monkeypatch.setitem(sys.modules, "solara.server.settings", settings)
    monkeypatch.setenv("SOLARA_TELEMETRY_MIXPANEL_ENABLE", "True")
    monkeypatch.setattr(
        checks, "solara_checked_path", tmp_path / "home" / ".solara_checked"
    )
    monkeypatch.setattr(
        checks, "jupyter_checked_path", tmp_path / "home" / ".jupyter_checked"
    )
    monkeypatch.delenv("PYTEST_CURRENT_TEST")  # Solara skips its check under pytest
    (tmp_path / "home").mkdir()
    assert checks._should_perform_check(checks.solara_checked_path)
    keep_solara_offline()
    assert settings.telemetry.mixpanel_enable is False
    assert os.environ["SOLARA_TELEMETRY_MIXPANEL_ENABLE"] == "False"
    assert not checks._should_perform_check(checks.solara_checked_path)
    assert not checks._should_perform_check(checks.jupyter_checked_path)


def test_cli_list_downloads_nothing(capsys, tmp_path):
    assert main(["viz", "install-assets", "--list", "--cache-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "@widgetti/solara-vuetify-app" in out
    assert "requirejs" in out
    assert not list(tmp_path.iterdir())


def test_cli_installs_from_the_registry_then_skips(registry, capsys, tmp_path):
    for package in cdn_packages():
        registry.publish(package)
    argv = [
        "viz",
        "install-assets",
        "--cache-dir",
        str(tmp_path),
        "--registry",
        registry.url,
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "installed" in out
    version = {package.name: package.version for package in cdn_packages()}["requirejs"]
    assert (tmp_path / f"requirejs@{version}/dist/main.js").is_file()
    assert main(argv) == 0
    assert "already present" in capsys.readouterr().out
    assert main([*argv, "--force"]) == 0
    assert "already present" not in capsys.readouterr().out


def test_cli_failure_is_one_line_and_exit_1(registry, capsys, tmp_path):
    argv = [
        "viz",
        "install-assets",
        "--cache-dir",
        str(tmp_path),
        "--registry",
        registry.url,
    ]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("mlm: error: ")
    assert "HTTP 404" in err
    assert err.count("\n") == 1
