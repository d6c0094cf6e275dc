"""gpu_runbook.hostvars on Ansible's own inventory and variable manager (in-process, no mocks):
each host's variable read as ``hostvars[host]`` resolves it, registered values from Ansible's
cache, everything else through raw_get."""

import pytest
from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible.vars.hostvars import HostVars
from ansible.vars.manager import VariableManager

from gpu_runbook.hostvars import MISSING, HostVarsReader, dig


def _hostvars(extra=None):
    loader = DataLoader()
    inventory = InventoryManager(loader=loader, sources=[])
    inventory.add_group("gpu_nodes")
    for name in ("gpu-a", "gpu-b", "gpu-c"):
        inventory.add_host(name, group="gpu_nodes")
    inventory.get_host("gpu-b").set_variable("result", {"from": "inventory"})
    inventory.get_host("gpu-c").set_variable("result", {"from": "inventory"})
    manager = VariableManager(loader=loader, inventory=inventory)
    if extra:
        manager.extra_vars.update(extra)  # what -e sets
    manager.set_host_facts("gpu-a", {"gpu_health": {"big": list(range(100))}})
    manager.set_nonpersistent_facts("gpu-a", {"result": {"from": "register"}})
    manager.set_nonpersistent_facts("gpu-c", {"result": {"from": "register"}})  # outranks its inventory var
    return HostVars(inventory=inventory, variable_manager=manager, loader=loader)


def _resolved(hostvars, host, var):
    found = hostvars.raw_get(host)
    return found.get(var, MISSING)


@pytest.mark.parametrize("extra", [None, {"result": {"from": "extra vars"}}])
def test_each_host_reads_as_ansible_resolves_it(extra):
    hostvars = _hostvars(extra)
    reader = HostVarsReader(hostvars)
    got = {h: reader.get(h, "result") for h in ("gpu-a", "gpu-b", "gpu-c")}
    assert got == {h: _resolved(hostvars, h, "result") for h in got}
    if extra:
        assert set(v["from"] for v in got.values()) == {"extra vars"}
    else:
        assert got == {"gpu-a": {"from": "register"}, "gpu-b": {"from": "inventory"}, "gpu-c": {"from": "register"}}
    assert reader.get("gpu-b", "nothing_by_that_name") is MISSING
    assert reader.unknown(["gpu-a", "gpu-z"]) == ["gpu-z"]


def test_without_hostvars_it_says_so():
    with pytest.raises(ValueError, match="hostvars are not available"):
        HostVarsReader(None)


@pytest.mark.parametrize("value, keys, default, want", [
    ({"a": {"b": 1}}, ("a", "b"), None, 1),
    ({"a": {"b": None}}, ("a", "b"), "d", None),   # a null at the end is a value
    ({"a": None}, ("a", "b"), "d", "d"),           # a null part way is not a mapping
    ({"a": "text"}, ("a", "b"), "d", "d"),
    ("not a map", ("a",), {}, {}),
    ({}, (), "d", {}),
])
def test_dig_is_jinjas_attribute_path_with_a_default(value, keys, default, want):
    assert dig(value, keys, default) == want
