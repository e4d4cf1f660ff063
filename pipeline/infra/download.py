"""Downloads that survive a cut and never leave a bad file behind, and archive extraction that stays
inside its target folder.

``download(url, path, expected)``: fetches into ``<path>.part`` with a progress bar; a ``.part`` left by
an earlier cut is resumed with an HTTP Range request (a server that ignores the range sends the whole
file, and the download restarts). The finished file is checked against `expected` and only then
renamed to `path`; a mismatch deletes it and stops with one line naming the file. A file already at
`path` is checked the same way. Without a recorded sum the file's SHA-256 is logged so that it can be
recorded.

A recorded checksum is ``"<algorithm>:<hex digest>"`` (``md5:...``, ``sha256:...``; a bare digest is
SHA-256). The published sums of the DML data sets are MD5. A digest shorter than the algorithm's is
compared as a prefix: the converted model weights publish only the first hex digits of their SHA-256
in their file names (torch.hub's convention).

``safe_extract(archive, target)``: tar or zip; refuses, before extracting anything, any member with an
absolute path, a ``..`` component, or that is a link or a device; extracts into a temporary folder
beside `target` and renames it into place.

``download_folder(configured)``: where downloads are kept. A relative ``data.download_dir`` inside DVC's
temporary experiment workspace (``<workspace>/.dvc/tmp/exps/<tmp>/``: ``dvc exp run --queue`` / ``--temp``),
where git-ignored folders are not copied, is the workspace's own folder, so queued experiments share one
set of checksummed downloads instead of fetching them again (or failing offline).
"""

from __future__ import annotations

import hashlib
import http.client
import logging
import os
import shutil
import stat
import subprocess
import tarfile
import tempfile
import urllib.error
import urllib.request
import zipfile
from pathlib import Path, PurePosixPath

from pipeline.infra.errors import PipelineError
from pipeline.infra.io import atomic_path

log = logging.getLogger(__name__)
EXPERIMENT_WORKSPACES = (".dvc", "tmp", "exps")  # DVC's temporary experiment workspaces live here


def download_folder(configured: str | Path, cwd: str | Path | None = None) -> Path:
    """`configured` (data.download_dir), relative to the workspace an experiment was queued from when the
    stage runs in one of DVC's temporary experiment workspaces; as given otherwise."""
    configured = Path(configured)
    if configured.is_absolute():
        return configured
    parts = Path(cwd or os.getcwd()).resolve().parts
    n = len(EXPERIMENT_WORKSPACES)
    for i in range(len(parts) - n):
        if parts[i : i + n] == EXPERIMENT_WORKSPACES:
            return Path(*parts[:i]) / configured
    return configured


BLOCK = 1 << 16


class DownloadError(PipelineError, OSError):
    """A download or archive cannot be used; the message names the URL or file."""


def file_digest(path: Path, algorithm: str = "sha256") -> str:
    digest = hashlib.new(algorithm)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def sha256(path: Path) -> str:
    return file_digest(path, "sha256")


def parse_checksum(expected: str) -> tuple[str, str]:
    """(algorithm, lower-case hex digest or prefix) of a recorded checksum."""
    algorithm, _, digest = expected.rpartition(":")
    algorithm = (algorithm or "sha256").lower()
    if (
        algorithm not in ("md5", "sha1", "sha256")
        or len(digest) < 8
        or any(c not in "0123456789abcdef" for c in digest.lower())
    ):
        raise DownloadError(f"checksum {expected!r}: expected '<md5|sha1|sha256>:<hex digest of 8 or more digits>'")
    return algorithm, digest.lower()


def verify(path: Path, expected: str | None, remove: bool = True) -> Path:
    """`path` if its checksum is `expected` (or none is recorded: then its SHA-256 is logged); else stop,
    deleting the file when `remove` (a download; a file the user pointed at is left alone)."""
    if expected is None:
        log.warning("%s: no recorded checksum; SHA-256 %s", path, sha256(path))
        return path
    algorithm, digest = parse_checksum(expected)
    got = file_digest(path, algorithm)
    if not got.startswith(digest):
        if remove:
            path.unlink()
        raise DownloadError(
            f"{path}: {algorithm.upper()} {got} does not match the recorded {digest}"
            + ("; the file was removed" if remove else "")
        )
    return path


def download(url: str, path: Path, expected: str | None = None, timeout: float = 60.0) -> Path:
    """The file at `url` saved as `path` (resumed if a ``.part`` exists), verified against `expected`."""
    from tqdm import tqdm

    path = Path(path)
    if expected is not None:
        parse_checksum(expected)  # a malformed recorded sum stops before anything is fetched
    if path.exists():
        return verify(path, expected)
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(path.name + ".part")
    have = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"Range": f"bytes={have}-"} if have else {})
    log.info("downloading %s%s", url, f" (resuming at byte {have})" if have else "")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            resumed = have and response.status == 206
            start = have if resumed else 0
            size = int(response.headers.get("Content-Length") or 0) + start
            with (
                open(part, "ab" if resumed else "wb") as out,
                tqdm(total=size or None, initial=start, unit="B", unit_scale=True, desc=path.name, disable=None) as bar,
            ):
                for block in iter(lambda: response.read(BLOCK), b""):
                    out.write(block)
                    bar.update(len(block))
            got = part.stat().st_size
            if size and got < size:
                raise http.client.IncompleteRead(b"", size - got)
    except urllib.error.HTTPError as err:
        if err.code == 416 and have:  # the range starts at the end: the .part is complete
            pass
        else:
            part.unlink(missing_ok=True)
            raise DownloadError(f"{url}: download failed ({err})") from err
    except (OSError, http.client.HTTPException) as err:  # a cut keeps the .part for the next call to resume
        raise DownloadError(f"{url}: download failed ({err}); run again to resume from {part}") from err
    verify(part, expected)
    part.rename(path)
    return path


def fetch_with_client(path: Path, command: list[str], expected: str, hint: str = "") -> Path:
    """`path` from a package registry through its own client: when missing, `command` (``npm pack NAME@VERSION``,
    ``apt-get download NAME=VERSION``: it writes ``path.name`` into its working folder) runs in a temporary folder
    beside `path`, whose file is renamed into place only when complete; then verified against `expected`. A
    failure's one line ends with `hint` (what the client needs that this machine may lack)."""
    path = Path(path)
    parse_checksum(expected)
    if not path.exists():
        shown = " ".join(command)
        if shutil.which(command[0]) is None:
            raise DownloadError(f"{path}: missing, and no {command[0]} here to run `{shown}` (put the file there)")
        log.info("fetching %s with %s", path.name, shown)
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
            done = subprocess.run(command, cwd=tmp, capture_output=True, text=True)
            if done.returncode or not (Path(tmp) / path.name).exists():
                said = (done.stderr.strip().splitlines() or ["no file"])[-1]
                raise DownloadError(f"`{shown}` failed: {said}{f' ({hint})' if hint else ''}")
            os.replace(Path(tmp) / path.name, path)
    return verify(path, expected)


def _check_member(name: str, kind_ok: bool, archive: Path) -> None:
    parts = PurePosixPath(name).parts
    if name.startswith(("/", "\\")) or (parts and ":" in parts[0]) or ".." in parts:
        raise DownloadError(f"{archive}: member {name!r} would land outside the target folder; nothing extracted")
    if not kind_ok:
        raise DownloadError(f"{archive}: member {name!r} is a link or special file; nothing extracted")


def safe_extract(archive: Path, target: Path) -> Path:
    """Extract a tar (any compression) or zip archive into the folder `target`, checking every member first."""
    archive, target = Path(archive), Path(target)
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as z:
            for info in z.infolist():
                mode = info.external_attr >> 16
                _check_member(info.filename, not stat.S_ISLNK(mode), archive)
            with atomic_path(target) as tmp:
                z.extractall(tmp)
        return target
    try:
        with tarfile.open(archive) as t:
            members = t.getmembers()
            for m in members:
                _check_member(m.name, m.isfile() or m.isdir(), archive)
            with atomic_path(target) as tmp:
                tmp.mkdir()
                for m in members:
                    dest = tmp / m.name
                    if m.isdir():
                        dest.mkdir(parents=True, exist_ok=True)
                    else:
                        dest.parent.mkdir(parents=True, exist_ok=True)
                        with t.extractfile(m) as src, open(dest, "wb") as out:
                            shutil.copyfileobj(src, out)
    except tarfile.TarError as err:
        raise DownloadError(f"{archive}: not a readable tar or zip archive ({err})") from err
    return target
