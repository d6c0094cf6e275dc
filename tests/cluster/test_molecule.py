"""Each role's Molecule scenario (roles/<role>/molecule/default: delegated driver on the
emulated cluster; converge, idempotence, verify reading real Slurm state and the fakes' logs),
run by the real `molecule test`. The session cluster is taken down first: one testbed at a time."""

import glob
import os
import subprocess

import pytest

from tests.cluster.conftest import _SESSION, require_testbed
from tests.conftest import BIN, REPO

# the full tier (make test-full, make molecule): each role's converge/idempotence/verify on a testbed of its
# own; the cluster tests run the same roles through the playbooks in the fast tier
pytestmark = pytest.mark.slow

SCENARIOS = sorted(glob.glob(os.path.join(REPO, "roles", "*", "molecule", "*", "molecule.yml")))


def _id(path):
    parts = path.split(os.sep)
    return "%s/%s" % (parts[-4], parts[-2])


def test_every_role_has_a_scenario():
    roles = sorted(os.path.basename(os.path.dirname(p)) for p in glob.glob(os.path.join(REPO, "roles", "*", "tasks")))
    with_scenario = sorted({_id(p).split("/")[0] for p in SCENARIOS})
    assert len(roles) >= 10 and [r for r in roles if r not in with_scenario] == []


@pytest.fixture(scope="module")
def testbed_free():
    """The session cluster down for the whole module (molecule brings its own up), back after."""
    require_testbed()
    sess = _SESSION.get("tb")
    restore = sess is not None and sess.is_up()
    if restore:
        sess.down()
    try:
        yield
    finally:
        if restore:
            sess.up()


@pytest.mark.parametrize("molecule_yml", SCENARIOS, ids=_id)
def test_molecule_scenario(testbed_free, molecule_yml):
    role_dir = os.path.dirname(os.path.dirname(os.path.dirname(molecule_yml)))
    scenario = os.path.basename(os.path.dirname(molecule_yml))
    env = dict(os.environ, PATH="%s:%s" % (BIN, os.environ["PATH"]),
               ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1", PY_COLORS="0")
    proc = subprocess.run([os.path.join(BIN, "molecule"), "test", "-s", scenario], cwd=role_dir, env=env,
                          capture_output=True, text=True, timeout=900)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-8000:]
    # the steps that prove something ran, not just create/destroy
    for step in ("converge", "idempotence", "verify"):
        assert step in out.lower(), step
