"""Issue 27: a house others can carry on -- one licence, stated in every shipped file; no
machine's absolute path in the tree; host keys checked for the inventory a user points at real
nodes (only the emulated cluster and Molecule turn the check off, in their own settings)."""

import configparser
import os
import subprocess

from gpu_runbook.vocab import EMITTERS
from tests.conftest import REPO as ROOT

# the generated vocabulary tables carry their program's licence in their own header (vocab/__init__.py)
GENERATED = EMITTERS + ("index",)


def _tracked(*patterns):
    out = subprocess.run(["git", "ls-files", "--"] + list(patterns), cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    return [p for p in out.splitlines() if p]


def test_one_licence_with_its_text_and_in_every_shipped_source_file():
    with open(os.path.join(ROOT, "LICENSE"), encoding="utf-8") as fh:
        text = fh.read()
    assert "Apache License" in text and "Version 2.0, January 2004" in text and "END OF TERMS AND CONDITIONS" in text
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as fh:
        assert 'license = { text = "Apache-2.0" }' in fh.read()
    shipped = [p for p in _tracked("library/*.py", "plugins/*.py", "module_utils/*.py")
               if not (p.startswith("module_utils/gpu_runbook/vocab/") and p[:-3].rsplit("/", 1)[1] in GENERATED)]
    assert len(shipped) > 100
    missing, foreign = [], []
    for p in shipped:
        with open(os.path.join(ROOT, p), encoding="utf-8") as fh:
            head = "".join(fh.readline() for _ in range(4))
        if "SPDX-License-Identifier: Apache-2.0" not in head:
            missing.append(p)
        if "General Public License" in head:
            foreign.append(p)
    assert not missing and not foreign, (missing, foreign)


def test_no_tracked_file_holds_this_machines_paths():
    here = os.path.abspath(ROOT)
    hits = subprocess.run(["git", "grep", "-l", "-F", here], cwd=ROOT, capture_output=True, text=True).stdout.split()
    assert hits == []


def test_host_keys_are_checked_by_the_projects_own_config():
    cfg = configparser.ConfigParser(interpolation=None)
    cfg.read(os.path.join(ROOT, "ansible.cfg"))
    assert cfg.get("defaults", "host_key_checking", fallback="True").strip().lower() not in ("false", "no", "0")
    ssh_args = cfg.get("ssh_connection", "ssh_args", fallback="")
    assert "StrictHostKeyChecking=no" not in ssh_args and "UserKnownHostsFile=/dev/null" not in ssh_args
