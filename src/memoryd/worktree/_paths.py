"""Slugs and confined paths: the only way a name becomes a path inside the store.

Invariants:
- a slug is lowercase ASCII `[a-z0-9-]`, no leading/trailing/double dashes, at most
  `MAX_SLUG_LENGTH` characters, never empty, never a reserved name;
- `StorePaths.resolve` only returns paths strictly inside the store root, and refuses any path
  whose existing components include a symlink, so a link planted in the store never redirects a
  write.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
import unicodedata
from pathlib import Path, PurePosixPath

from memoryd.errors import PathEscapeError

MAX_SLUG_LENGTH = 64
# Folder names the layout itself uses, plus names some file systems treat specially.
RESERVED_SLUGS = frozenset(
    {
        "people",
        "companies",
        "projects",
        "areas",
        "resources",
        "archives",
        "life",
        "memory",
        "index",
        "con",
        "prn",
        "aux",
        "nul",
        *(f"com{i}" for i in range(1, 10)),
        *(f"lpt{i}" for i in range(1, 10)),
    }
)
_NOT_SLUG = re.compile(r"[^a-z0-9]+")


def slugify(name: str, *, max_length: int = MAX_SLUG_LENGTH) -> str:
    """Given any text, return a safe, stable slug for it.

    Accents are folded to ASCII; everything else that is not a letter or digit becomes one dash.
    A name that leaves nothing (empty, punctuation, another script) or a reserved word gets a
    short hash of the original so that distinct names keep distinct slugs.
    """
    folded = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    slug = _NOT_SLUG.sub("-", folded.lower()).strip("-")
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    if not slug:
        return f"x-{digest}"
    if len(slug) > max_length:
        slug = slug[: max_length - 9].rstrip("-") + "-" + digest
    if slug in RESERVED_SLUGS:
        slug = f"{slug}-{digest}"
    return slug


class StorePaths:
    """Resolves store-relative paths, refusing anything that would escape the root."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    def resolve(self, relative: str | PurePosixPath) -> Path:
        """Return the absolute path of `relative` inside the store.

        Raise PathEscapeError if it is absolute, climbs with '..', names the store root itself or
        `.git`, or passes through a symlink that exists on disk.
        """
        rel = PurePosixPath(relative)
        # A NUL byte can name no file; the OS would reject it with ValueError, not a store error.
        if "\x00" in str(rel):
            raise PathEscapeError(str(relative).replace("\x00", "\\x00"), self.root)
        if rel.is_absolute() or not rel.parts or any(p in ("..", ".", "") for p in rel.parts):
            raise PathEscapeError(str(relative), self.root)
        if rel.parts[0] == ".git":
            raise PathEscapeError(str(relative), self.root)
        current = self.root
        for part in rel.parts:
            current = current / part
            try:
                mode = os.lstat(current).st_mode
            except (FileNotFoundError, NotADirectoryError):
                # Nothing exists here or below: no symlink can redirect the path.
                break
            except OSError as error:
                if error.errno == errno.ENAMETOOLONG:
                    raise PathEscapeError(str(relative)[:200], self.root) from None
                raise
            if stat.S_ISLNK(mode):
                raise PathEscapeError(str(relative), self.root)
        return self.root.joinpath(*rel.parts)

    def relative(self, absolute: Path) -> PurePosixPath:
        """Return the store-relative form of an absolute path inside the store."""
        try:
            return PurePosixPath(absolute.relative_to(self.root).as_posix())
        except ValueError:
            raise PathEscapeError(str(absolute), self.root) from None
