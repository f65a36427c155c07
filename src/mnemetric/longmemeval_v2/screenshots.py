"""Screenshot archives of LongMemEval-V2: safe extraction and the screenshots/ layout.

Upstream layout (xiaowu0162/LongMemEval-V2 at be15ea6e995462f3391c1a610892df3f67dfa7bd,
data/public_data.py prepare_screenshots): archives ``trajectory_screenshots/<name>.tar.gz`` for
name in web_screenshots, enterprise_screenshots_base, enterprise_screenshots_patch, in that order;
each is extracted to ``trajectory_screenshots/<name>/`` only if that folder is absent; then every
immediate sub-folder of an extracted folder is linked (relative symlink, or a copy) to
``screenshots/<sub-folder name>``. The patch replaces an existing ``screenshots/<dir>`` whole; web
and base never replace one.

Safer than upstream, which only checks that each member name resolves inside the destination and
then extracts in place: here a member is refused (InputError naming the archive and the member)
when its name is absolute or has a ``..`` part, when it is a symlink or hard link whose target is
absolute or leaves the root, or when it is anything but a file, folder or link (devices, FIFOs);
Python's ``tarfile.data_filter`` runs after our checks. Extraction goes to a temporary sibling
folder, renamed into place only when the whole archive is done, so an interrupted extraction never
leaves a folder that looks complete (upstream's would be taken as "present" next time).
"""

from __future__ import annotations

import gzip
import os
import posixpath
import shutil
import tarfile
import tempfile
import zlib
from pathlib import Path

from mnemetric.errors import ConfigError, InputError
from mnemetric.longmemeval_v2.pins import ARCHIVE_DIR, SCREENSHOT_ARCHIVES, archive_file

SCREENSHOTS_DIR = "screenshots"
LINK_MODES = ("symlink", "copy")


def _refuse(archive: Path, member: tarfile.TarInfo, why: str) -> InputError:
    return InputError(str(archive), f"member {member.name!r}", "<archive>", f"refused: {why}",
                      fix="the archive is not a plain screenshot archive; obtain a clean copy (its sha256 must match the pin)")


def _escapes(path: str) -> bool:
    return path.startswith("/") or posixpath.normpath(path).split("/")[0] == ".."


def check_member(archive: Path, member: tarfile.TarInfo) -> None:
    """Raise InputError unless ``member`` is a file, folder or an in-root link with a plain name."""
    name = member.name
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise _refuse(archive, member, "absolute path")
    if ".." in name.replace("\\", "/").split("/"):
        raise _refuse(archive, member, "path with a '..' part")
    if member.issym():
        target = member.linkname
        if target.startswith("/") or _escapes(posixpath.join(posixpath.dirname(name), target)):
            raise _refuse(archive, member, f"symbolic link to {target!r}, outside the extraction folder")
    elif member.islnk():
        if _escapes(member.linkname):
            raise _refuse(archive, member, f"hard link to {member.linkname!r}, outside the extraction folder")
    elif not (member.isreg() or member.isdir()):
        raise _refuse(archive, member, "not a regular file, folder or link (device, FIFO or other special file)")


def safe_extract(archive: Path, dest: Path) -> int:
    """Extract ``archive`` (tar, any compression) to the absent folder ``dest``; return the member count.

    Everything lands in a temporary sibling folder first; any refused member or error removes it.
    """
    if dest.exists():
        raise ConfigError(str(dest), "already exists; safe_extract only extracts into an absent folder")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".partial", dir=dest.parent))
    count = 0

    def member_filter(member: tarfile.TarInfo, path: str) -> tarfile.TarInfo:
        nonlocal count
        check_member(archive, member)
        count += 1
        return tarfile.data_filter(member, path)

    def checked(tar: tarfile.TarFile):  # Python < 3.11.4 has no extraction filters: our checks only
        nonlocal count
        for member in tar:
            check_member(archive, member)
            count += 1
            yield member

    try:
        with tarfile.open(archive, "r:*") as tar:
            tar.errorlevel = 2
            if hasattr(tarfile, "data_filter"):
                tar.extractall(tmp, filter=member_filter)
            else:
                tar.extractall(tmp, members=checked(tar))
        os.rename(tmp, dest)
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as exc:  # broken or cut-off archive
        shutil.rmtree(tmp, ignore_errors=True)
        raise InputError(str(archive), "<archive>", "<archive>", f"cannot be extracted: {exc}") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return count


def _remove_stale(parent: Path, name: str) -> None:
    """Drop temporary folders a killed extraction of ``name`` left behind (ours by their name)."""
    for stale in parent.glob(f".{name}.*.partial"):
        shutil.rmtree(stale, ignore_errors=True)


def extract_archives(root: Path, names: tuple[str, ...] | None = None) -> list[dict]:
    """Extract each present archive whose folder is absent (upstream order); one summary per archive."""
    wanted = names if names is not None else tuple(n for n, _, _ in SCREENSHOT_ARCHIVES)
    sources = root / ARCHIVE_DIR
    done = []
    for name, _, replaces in SCREENSHOT_ARCHIVES:
        archive, folder = root / archive_file(name), sources / name
        if name not in wanted or not (archive.is_file() or folder.is_dir()):
            continue
        if not folder.is_dir():
            _remove_stale(sources, name)
            safe_extract(archive, folder)
        dirs = sorted(p.name for p in folder.iterdir() if p.is_dir())
        done.append({"archive": archive_file(name), "folder": f"{ARCHIVE_DIR}/{name}", "replaces_existing": replaces,
                     "trajectory_folders": len(dirs)})
    return done


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


def _place(src: Path, dst: Path, mode: str) -> str:
    """Link (or copy) ``src`` to the absent-or-replaceable ``dst``; return "symlinked" or "copied"."""
    if mode == "symlink":
        tmp = dst.with_name(f".{dst.name}.link")
        _remove(tmp)
        try:
            tmp.symlink_to(os.path.relpath(src.resolve(), dst.parent.resolve()), target_is_directory=True)
        except OSError:
            mode = "copy"
        else:
            if dst.is_dir() and not dst.is_symlink():
                shutil.rmtree(dst)
            os.replace(tmp, dst)
            return "symlinked"
    _remove(dst)
    shutil.copytree(src, dst)
    return "copied"


def link_screenshots(root: Path, *, mode: str = "symlink") -> dict[str, int]:
    """Expose every extracted trajectory folder as screenshots/<dir> (patch replaces; others skip)."""
    if mode not in LINK_MODES:
        raise ConfigError("screenshots.mode", f"{mode!r} is not one of {', '.join(LINK_MODES)}")
    counts = {"symlinked": 0, "copied": 0, "skipped": 0}
    target_root = root / SCREENSHOTS_DIR
    target_root.mkdir(parents=True, exist_ok=True)
    for name, _, replaces in SCREENSHOT_ARCHIVES:
        folder = root / ARCHIVE_DIR / name
        if not folder.is_dir():
            continue
        for sub in sorted(p for p in folder.iterdir() if p.is_dir()):
            dst = target_root / sub.name
            if (dst.exists() or dst.is_symlink()) and not replaces:
                counts["skipped"] += 1
                continue
            counts[_place(sub, dst, mode)] += 1
    return counts


def prepare_screenshots(root: Path, names: tuple[str, ...] | None = None, *, mode: str = "symlink") -> dict:
    """extract_archives then link_screenshots; an error when no screenshot source exists at all."""
    extracted = extract_archives(root, names)
    if not extracted:
        raise InputError(str(root / ARCHIVE_DIR), "<folder>", "<archives>", "no screenshot archive or extracted folder found",
                         fix="download the screenshot archives (obtain with images) or run without images")
    return {"archives": extracted, "links": link_screenshots(root, mode=mode)}
