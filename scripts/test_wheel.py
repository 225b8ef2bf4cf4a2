"""`make test-dist`: the wheel `make dist` builds, as a user gets it. It is
installed into a fresh venv (no network: the wheel needs nothing else), its
`ragbox` runs from the venv's scripts folder, indexes a copy of the example
workspace and finds a note by meaning. An archive beside it is unpacked and
its `ragbox` run."""

import pathlib
import shutil
import subprocess
import sys
import tempfile
import venv

ROOT = pathlib.Path(__file__).resolve().parents[1]


def run(*args: str, cwd: pathlib.Path | None = None) -> str:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        sys.exit(f"{' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done.stdout


def main(wheels: str) -> None:
    found = sorted(pathlib.Path(wheels).glob("ragbox-*.whl"))
    if len(found) != 1:
        sys.exit(f"expected one ragbox wheel in {wheels}, found {[str(w) for w in found]}")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        venv.create(tmp / "venv", with_pip=True)
        bin_dir = tmp / "venv" / ("Scripts" if sys.platform == "win32" else "bin")
        run(str(bin_dir / "python"), "-m", "pip", "install", "--quiet", "--no-index", "--disable-pip-version-check",
            str(found[0]))
        ragbox = bin_dir / "ragbox"
        version = run(str(ragbox), "--version")
        if not version.startswith("ragbox "):
            sys.exit(f"ragbox --version printed {version!r}")
        workspace = tmp / "workspace"
        shutil.copytree(ROOT / "examples" / "workspace", workspace)
        run(str(ragbox), "index", "--workspace", str(workspace))
        hits = run(str(ragbox), "search", "how are sessions authenticated", "--semantic", "-n", "3",
                   "--workspace", str(workspace))
        if "jwt" not in hits.lower():
            sys.exit(f"the installed ragbox did not find the JWT note:\n{hits}")
        print(f"{found[0].name}: installed into a fresh venv, {version.strip()}, indexed and searched")
        # The archive beside it: unpacked, its binary runs and is the same version.
        for packed in sorted(pathlib.Path(wheels).glob("ragbox-*.tar.gz")):
            shutil.unpack_archive(packed, tmp / "unpacked")
            unpacked = tmp / "unpacked" / packed.name.removesuffix(".tar.gz") / "ragbox"
            if run(str(unpacked), "--version") != version:
                sys.exit(f"{packed.name}'s ragbox is not the wheel's {version.strip()}")
            print(f"{packed.name}: unpacked, {version.strip()}")


if __name__ == "__main__":
    main(sys.argv[1])
