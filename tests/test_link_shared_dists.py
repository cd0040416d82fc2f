"""scripts/link_shared_dists.py: the engine virtualenv shares .venv's wheels of the same version by hard links."""

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "link_shared_dists.py"


def make_dist(site: Path, name: str, version: str, files: dict[str, bytes], editable: bool = False) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nbody\n")
    if editable:
        (info / "direct_url.json").write_text("{}")
    rows = [f"{info.name}/METADATA,,", f"{info.name}/RECORD,,", "../../../bin/tool,,"]
    for rel, data in files.items():
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_bytes(data)
        rows.append(f"{rel},sha256=x,{len(data)}")
    (info / "RECORD").write_text("\n".join(rows) + "\n")


def test_links_same_versions_only(tmp_path):
    source, target = tmp_path / "a" / "site", tmp_path / "b" / "site"
    (tmp_path / "a" / "bin").mkdir(parents=True)
    (tmp_path / "a" / "bin" / "tool").write_text("#!/a/python")
    target.mkdir(parents=True)
    make_dist(source, "nvidia-cublas", "13.1", {"nvidia/cu13/lib/libcublas.so": b"x" * 100})
    make_dist(source, "torch", "2.14.0", {"torch/__init__.py": b"new"})
    make_dist(source, "Foo_Bar", "1.0", {"foo_bar.py": b"foo"})
    make_dist(source, "glrmask", "0.1", {"glrmask.pth": b"/src"}, editable=True)
    make_dist(source, "vllm", "0.33.0", {"vllm/__init__.py": b"v"})
    make_dist(target, "foo-bar", "1.0", {"foo_bar.py": b"own"})
    report = tmp_path / "report.json"
    wanted = [("nvidia_cublas", "13.1"), ("torch", "2.13.0"), ("foo.bar", "1.0"), ("glrmask", "0.1")]
    report.write_text(json.dumps({"install": [{"metadata": {"name": n, "version": v}} for n, v in wanted]}))

    out = subprocess.run(
        [sys.executable, str(SCRIPT), str(source), str(target), str(report)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout

    assert "1 distributions" in out
    linked = target / "nvidia/cu13/lib/libcublas.so"
    assert linked.stat().st_ino == (source / "nvidia/cu13/lib/libcublas.so").stat().st_ino
    assert (target / "nvidia_cublas-13.1.dist-info" / "RECORD").is_file()
    assert not (tmp_path / "b" / "bin").exists()  # console scripts name the source's Python
    assert not (target / "torch").exists()  # another version
    assert not (target / "vllm").exists()  # not in the resolution
    assert not (target / "glrmask.pth").exists()  # editable
    assert (target / "foo_bar.py").read_bytes() == b"own"  # the target's own install is left alone
