"""Wheel build hook: the Harbor job folders ship as one compressed archive.

``data/harbor_jobs`` is 5,087 small files (4,854 of them one job); as files they made the
wheel 3.4 MB and 5,181 entries. The hook packs the folder into
``metrickit/_examples/harbor_jobs.tar.xz`` (about 270 KB), which :mod:`metrickit.examples`
unpacks once into the user's cache the first time a Harbor example is asked for. The
archive is deterministic (sorted names, fixed times and owners), so the same data gives the
same bytes; the files in it are the files of ``data/harbor_jobs``, byte for byte
(``tests/test_examples.py`` checks the round trip).

Editable installs read ``data/`` directly and get no archive.
"""

from __future__ import annotations

import io
import lzma
import tarfile
from pathlib import Path
from typing import Any

try:
    from hatchling.builders.hooks.plugin.interface import BuildHookInterface
except ImportError:  # imported by the tests, outside a build
    BuildHookInterface = object  # type: ignore[assignment,misc]

#: every member's modification time (2025-07-14 09:00 UTC): the archive's bytes depend on
#: the data only
FIXED_MTIME = 1752483600


def write_archive(folder: Path, out: Path) -> Path:
    """Pack ``folder`` (its name the archive's top level) into the xz-compressed tar ``out``.

    Parameters
    ----------
    folder
        The folder to pack, e.g. ``data/harbor_jobs``.
    out
        The archive to write.

    Returns
    -------
    Path
        ``out``.
    """
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        paths = sorted(folder.rglob("*"), key=lambda p: p.relative_to(folder).as_posix())
        for path in [folder, *paths]:
            name = path.relative_to(folder.parent).as_posix()
            info = tarfile.TarInfo(name)
            info.mtime = FIXED_MTIME
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            if path.is_dir():
                info.type = tarfile.DIRTYPE
                info.mode = 0o755
                tar.addfile(info)
            else:
                data = path.read_bytes()
                info.size = len(data)
                info.mode = 0o644
                tar.addfile(info, io.BytesIO(data))
    out.parent.mkdir(parents=True, exist_ok=True)
    # xz's default level: 1.7 s for the 17 MB of example jobs, 266 KB; level 9 "extreme"
    # saved 34 KB for 9.3 s, paid by every wheel build (and the tests that make one)
    out.write_bytes(lzma.compress(buffer.getvalue(), preset=6))
    return out


class ExamplesHook(BuildHookInterface):  # type: ignore[misc,valid-type]
    """Adds the example data to a non-editable wheel under ``metrickit/_examples``.

    The hook's configuration (``[tool.hatch.build.targets.wheel.hooks.custom]``) names the
    entries of ``data/`` to copy as they are (``examples``) and the folders to ship as one
    ``<name>.tar.xz`` each (``archived``). An editable install gets none of them: it reads
    ``data/`` in the checkout.
    """

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or version == "editable":
            return
        root = Path(self.root)
        data = root / "data"
        for name in self.config.get("examples", []):
            build_data["force_include"][str(data / name)] = f"metrickit/_examples/{name}"
        for name in self.config.get("archived", []):
            out = write_archive(data / name, root / "build" / "examples" / f"{name}.tar.xz")
            build_data["force_include"][str(out)] = f"metrickit/_examples/{name}.tar.xz"
