"""What a release publishes besides the wheels, as ruff and uv publish theirs:
`archive` puts one target's built binary into `ragbox-<target>.tar.gz` (a
`.zip` for Windows) with the README; `checksums` writes
`<file>.sha256` beside every wheel and archive in a folder (`sha256sum -c`
reads them) and `SHA256SUMS` over all of them. `make dist` and
`.github/workflows/release.yml` run the same commands."""

import argparse
import hashlib
import pathlib
import sys
import tarfile
import zipfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
# What goes into an archive beside the binary.
DOCS = ("README.md",)


def binary_name(target: str) -> str:
    return "ragbox.exe" if "windows" in target else "ragbox"


def archive(target: str, profile: str, out: pathlib.Path) -> pathlib.Path:
    """`target/<target>/<profile>/ragbox`, or `target/<profile>/ragbox` when
    built for this machine without --target, into one archive in `out`."""
    profile_dir = "debug" if profile == "dev" else profile
    name = binary_name(target)
    candidates = [ROOT / "target" / target / profile_dir / name, ROOT / "target" / profile_dir / name]
    built = next((c for c in candidates if c.is_file()), None)
    if built is None:
        sys.exit(f"no {name} built for {target} ({profile}): looked at {', '.join(map(str, candidates))}")
    out.mkdir(parents=True, exist_ok=True)
    folder = f"ragbox-{target}"
    if "windows" in target:
        path = out / f"{folder}.zip"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            z.write(built, f"{folder}/{name}")
            for doc in DOCS:
                z.write(ROOT / doc, f"{folder}/{doc}")
    else:
        path = out / f"{folder}.tar.gz"
        with tarfile.open(path, "w:gz") as t:
            info = t.gettarinfo(str(built), f"{folder}/{name}")
            info.mode, info.uid, info.gid, info.uname, info.gname = 0o755, 0, 0, "", ""
            with built.open("rb") as f:
                t.addfile(info, f)
            for doc in DOCS:
                t.add(ROOT / doc, f"{folder}/{doc}")
    print(f"{path}: {built}")
    return path


def sha256(path: pathlib.Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def checksums(folder: pathlib.Path) -> None:
    """`<file>.sha256` for each wheel and archive in `folder`, and SHA256SUMS over all."""
    files = sorted(p for p in folder.iterdir() if p.suffix in (".whl", ".zip") or p.name.endswith(".tar.gz"))
    if not files:
        sys.exit(f"nothing to checksum in {folder}: no wheel or archive")
    lines = []
    for f in files:
        line = f"{sha256(f)}  {f.name}\n"
        (folder / f"{f.name}.sha256").write_text(line)
        lines.append(line)
    (folder / "SHA256SUMS").write_text("".join(lines))
    print(f"{len(files)} checksums in {folder / 'SHA256SUMS'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    a = commands.add_parser("archive", help="one target's binary into an archive")
    a.add_argument("--target", required=True, help="the Rust target triple it was built for")
    a.add_argument("--profile", default="release", help="the cargo profile it was built in")
    a.add_argument("--out", required=True, type=pathlib.Path)
    c = commands.add_parser("checksums", help="a .sha256 for every wheel and archive, and SHA256SUMS")
    c.add_argument("folder", type=pathlib.Path)
    args = parser.parse_args()
    if args.command == "archive":
        archive(args.target, args.profile, args.out)
    else:
        checksums(args.folder)


if __name__ == "__main__":
    main()
