"""Every parser of the engine, with how to call it on a fuzzed text and what it must return.

A parser is a public ``parse_*`` callable of any gpu_runbook module (tests/fuzz/test_fuzz_table.py
fails when one appears that this table does not list), plus the other functions that read
untrusted text: host splitting, node sets, bug-report sections, source detection and the
whole-host analysis. ``raises``: the exceptions a parser documents for bad input (a
one-line error its caller reports); anything else is a bug."""

from hypothesis import strategies as st

from gpu_runbook import (analyze, autopilot, bugreport, capture, content, dcgm, gpud, k8s_node, linefamily, lspci, nccl_topo,
                         pbsnodes, pkglog, runbook,
                         slurm, slurm_jobs, slurm_reasons, sources, systemd_units, timeutil, vocab)
from gpu_runbook.infiniband import (fi_info, ibdev2netdev, ibdiagnet, iblinkinfo, ibportstate, ibstat, ibv_devinfo, lshca,
                                    mlxlink, names, perfquery, pingpong, rdma_link, reload, restart, sm_unhealthy)
from gpu_runbook.infiniband import fabric_users, netpaths, sysfs
from gpu_runbook.infiniband import parse_ib, detect_ib_format
from gpu_runbook.active import nvbandwidth, perftest
from gpu_runbook.dcgm import dmon as dcgm_dmon
from gpu_runbook.joblog import parse_job_logs
from gpu_runbook.joblog import pyspy
from gpu_runbook.joblog.lines import parse_file
from gpu_runbook.joblog.state import JobState
from gpu_runbook.kernlog import hosts, parse_kernel_log, timestamps
from gpu_runbook.nvsmi import apps, dispatch, failed_run, holders, parse_nvidia_smi_failure
from gpu_runbook.nvsmi import dmon as nvsmi_dmon, q_text, q_xml, query_csv, reset, table, topo
from gpu_runbook.plan import envfile

from .mutate import texts

RCS = (None, 0, 1, 2, 4, 6, 9, 15, 124, 137, 255, -9)
UTC = timeutil.UTC


class Target(object):
    def __init__(self, func, family, call=None, returns=dict, raises=(), args=None):
        """``family``: the seed texts the fuzzed text comes from (None: the call reads only
        ``args``); ``call(text, extra)``: the parser's answer, ``extra`` drawn from ``args``."""
        self.func, self.family, self.returns, self.raises = func, family, returns, raises
        self.call = call or (lambda text, extra: func(text))
        self.args = st.sampled_from(RCS) if args is None else args  # the extra argument the call may use (an exit code)

    @property
    def name(self):
        return "%s.%s" % (self.func.__module__, self.func.__name__)


def _parse_file(text, extra):
    st_ = JobState(None, 2026)
    parse_file("rank-%s.log" % (extra or 0), text, st_)
    return st_


def _lines(text):
    return text.splitlines()[:200]


def _each_line(func):
    """A parser of one short value, fed every line of the text (at most 200)."""
    def call(text, extra):
        return [func(line) for line in _lines(text)] + [func(text[:4096])]
    return call


def _each_line_raising(func, exc):
    """Like _each_line, for a parser whose documented answer to a bad value is ``exc``."""
    def one(value):
        try:
            return func(value)
        except exc as e:
            assert str(e), "an error without a message"
            return None
    return _each_line(one)


# source name -> the family of texts that source holds
HOST_SOURCES = {
    "nvidia-smi-q.xml": "nvsmi_xml", "nvidia-smi-q.txt": "nvsmi_q", "nvidia-smi.txt": "nvsmi_table",
    "nvidia-smi-query-gpu.csv": "csv", "nvidia-smi-compute-apps.csv": "csv", "kern.log": "kernlog",
    "ib-sysfs.txt": "ib", "ibstat.txt": "ib", "ibv_devinfo.txt": "ib", "perfquery.txt": "ib",
    "iblinkinfo.txt": "ib", "nvidia-bug-report.log": "bugreport", "fi_info.txt": "ib", "nvidia-smi-topo.txt": "system",
    "dcgmi-dmon.txt": "dcgmi",
}


@st.composite
def host_sources(draw):
    """A capture directory's sources: 1-4 of the host sources, each a fuzzed text of its kind."""
    chosen = draw(st.lists(st.sampled_from(sorted(HOST_SOURCES)), min_size=1, max_size=4, unique=True))
    return {name: draw(texts(HOST_SOURCES[name])) for name in chosen}


@st.composite
def job_files(draw):
    """A job's log files: {name: fuzzed job log}, 1-3 files named as ranks or Slurm outputs."""
    n = draw(st.integers(1, 3))
    return {draw(st.sampled_from(("rank-%d.log" % i, "slurm-4242.out", "job.log", "x"))) + str(i):
            draw(texts("joblog")) for i in range(n)}


NV = dict(returns=tuple)  # the nvsmi parsers answer (facts, findings)
TARGETS = [
    # nvidia-smi
    Target(dispatch.parse_nvidia_smi, "nvsmi_q", **NV),
    Target(dispatch.parse_nvidia_smi_xml, "nvsmi_xml", **NV),
    Target(dispatch.parse_nvidia_smi_q, "nvsmi_q", **NV),
    Target(dispatch.parse_nvidia_smi_table, "nvsmi_table", **NV),
    Target(dispatch.parse_query_gpu_csv, "csv", **NV),
    Target(dispatch.parse_compute_apps_csv, "csv", returns=list),
    Target(dispatch.parse_compute_apps_csv_findings, "csv", **NV),
    Target(dispatch.detect_format, "nvsmi_table", returns=(str, type(None))),
    Target(q_xml.parse_xml, "nvsmi_xml", lambda t, e: q_xml.parse_xml(t, "q.xml", 8, None), **NV),
    Target(q_text.parse_q, "nvsmi_q", lambda t, e: q_text.parse_q(t, "q.txt", 8, None), **NV),
    Target(table.parse_table, "nvsmi_table", lambda t, e: table.parse_table(t, "smi.txt", 8, None), **NV),
    Target(query_csv.parse_csv, "csv", lambda t, e: query_csv.parse_csv(t, "q.csv", 8, None, None), **NV),
    Target(apps.parse_apps, "csv", lambda t, e: apps.parse_apps(t, "apps.csv", None), returns=tuple),
    Target(parse_nvidia_smi_failure, "nvsmi_q", lambda t, e: parse_nvidia_smi_failure(t, e), **NV),
    Target(failed_run.parse_failure, "nvsmi_q", lambda t, e: failed_run.parse_failure(t, e, "q.xml", 8), **NV),
    Target(reset.parse_gpu_id, "system", _each_line(reset.parse_gpu_id), returns=list),
    Target(reset.parse_identity_csv, "csv", returns=list),
    Target(reset.parse_persistence_output, "system", lambda t, e: reset.parse_persistence_output(t, e)),
    Target(reset.parse_reset_output, "system", lambda t, e: reset.parse_reset_output(t, e)),
    Target(holders.parse_systemctl_show, "system"),
    Target(holders.parse_proc_modules, "system"),
    Target(holders.parse_topo_peers, "system"),
    Target(topo.parse_nvidia_smi_topo, "system", returns=tuple),
    Target(topo.read_matrix, "system", returns=(dict, type(None))),
    # kernel logs and host names in text
    Target(parse_kernel_log, "kernlog", lambda t, e: parse_kernel_log(t, tz=UTC), returns=tuple),
    Target(hosts.split_text, "kernlog", returns=tuple),
    Target(hosts.expand_nodeset, "slurm_job", _each_line(hosts.expand_nodeset), returns=list),
    Target(timestamps.parse_since, "system", _each_line_raising(timestamps.parse_since, ValueError), returns=list),
    # InfiniBand
    Target(parse_ib, "ib", returns=tuple),
    Target(detect_ib_format, "ib", returns=(str, type(None))),
    Target(sysfs.parse_ib_sysfs, "ib", returns=tuple),
    Target(perfquery.parse_perfquery, "ib", returns=tuple),
    Target(ibstat.parse_ibstat, "ib", returns=tuple),
    Target(ibv_devinfo.parse_ibv_devinfo, "ib", returns=tuple),
    Target(iblinkinfo.parse_iblinkinfo, "ib", returns=tuple),
    Target(ibdev2netdev.parse_ibdev2netdev, "ib", returns=tuple),
    Target(lshca.parse_lshca, "ib", returns=tuple),
    Target(ibdiagnet.parse_ibdiagnet, "ib", returns=tuple),
    Target(fi_info.parse_fi_info, "ib", returns=tuple),
    Target(sm_unhealthy.parse_sm_unhealthy_ports, "ib", returns=tuple),
    Target(k8s_node.parse_k8s_node, "system", returns=tuple),
    Target(nccl_topo.parse_nccl_topo, "system", returns=tuple),
    Target(rdma_link.parse_rdma_link, "ib", returns=tuple),
    Target(ibportstate.parse_ibportstate, "ib", returns=tuple),
    Target(mlxlink.parse_mlxlink, "ib", returns=tuple),
    # the node's agents and services: GPUd's states, lspci -vv, systemctl status
    Target(gpud.parse_gpud, "system", returns=tuple),
    # IBM Autopilot's report, log and labels (one section per node); PBS's pbsnodes (one record per node)
    Target(autopilot.parse_autopilot, "system", returns=tuple),
    Target(autopilot.host_parts, "system", returns=list),
    Target(pbsnodes.parse_pbsnodes, "slurm_node", returns=tuple),
    Target(pbsnodes.node_records, "slurm_node", returns=list),
    Target(pbsnodes.host_parts, "slurm_node", returns=list),
    Target(lspci.parse_lspci, "system", returns=tuple),
    Target(systemd_units.parse_systemctl, "system", returns=tuple),
    Target(pkglog.parse_pkglog, "system", returns=tuple),
    Target(pingpong.parse_pingpong, "ib", returns=tuple),
    Target(nvsmi_dmon.parse_nvidia_smi_dmon, "system", returns=tuple),
    Target(slurm_reasons.state_records, "slurm_node", returns=list),
    # the active tier's outputs (nvbandwidth's matrices, perftest's bandwidth table)
    Target(nvbandwidth.parse_nvbandwidth, "system", returns=dict),
    Target(perftest.parse_perftest_bw, "system", returns=dict),
    Target(perftest.parse_perftest_report, "system", returns=tuple),
    # a py-spy frame line ('func (file:line)'): None when it is not one
    Target(pyspy.parse_frame, "joblog", _each_line(pyspy.parse_frame), returns=list),
    Target(names.parse_rate, "system", _each_line(names.parse_rate), returns=list),
    Target(reload.parse_module_table, "system"),
    Target(restart.parse_proc_modules, "system", returns=set),
    Target(restart.parse_port_specs, "system", lambda t, e: restart.parse_port_specs(_lines(t)), returns=tuple),
    # job logs
    Target(parse_job_logs, None, lambda t, e: parse_job_logs(e), returns=tuple, args=job_files()),
    Target(parse_file, "joblog", _parse_file, returns=JobState),
    # Slurm
    Target(slurm.parse_scontrol_show_job, "slurm_job", lambda t, e: slurm.parse_scontrol_show_job(t, tz=UTC)),
    Target(slurm.parse_sacct, "slurm_job", lambda t, e: slurm.parse_sacct(t, "12345", tz=UTC)),
    Target(slurm.parse_scontrol_show_node, "slurm_node"),
    Target(slurm_jobs.parse_squeue_jobs, "slurm_job", returns=list),
    Target(slurm.parse_scontrol_show_nodes, "slurm_node", returns=list),
    Target(slurm.parse_scontrol_show_topology, "slurm_node"),
    Target(fabric_users.parse_mounts, "system", returns=list),
    Target(netpaths.parse_route, "system", returns=list),
    Target(netpaths.parse_ipv6_route, "system", returns=list),
    Target(netpaths.parse_if_inet6, "system", returns=list),
    Target(slurm.parse_node_findings, "slurm_node", returns=tuple),
    Target(dcgm.parse_dcgmi, "dcgmi", returns=tuple),
    Target(dcgm_dmon.parse_dcgmi_dmon, "dcgmi", returns=tuple),
    Target(dcgm_dmon.read_table, "dcgmi", returns=(dict, type(None))),
    Target(slurm.parse_node_state, "system", _each_line(slurm.parse_node_state), returns=list),
    Target(slurm.expand_hostlist, "slurm_job", _each_line(slurm.expand_hostlist), returns=list),
    # bug reports, source detection, whole hosts
    Target(bugreport.split_bug_report, "bugreport"),
    Target(sources.detect_source, "kernlog", returns=(str, type(None))),
    # issue 24: what a text holds, by content; which family a line is; an emitter's message
    Target(content.plan, "nvsmi_table", returns=content.Plan),
    Target(linefamily.is_kernel_line, "kernlog", _each_line(linefamily.is_kernel_line), returns=list),
    Target(linefamily.is_node_line, "kernlog", _each_line(linefamily.is_node_line), returns=list),
    Target(vocab.match_line, "joblog", _each_line(vocab.match_line), returns=list),
    Target(analyze.analyze_host, None, lambda t, e: analyze.analyze_host(e, tz=UTC), args=host_sources()),
    Target(capture.split_hosts, None, lambda t, e: capture.split_hosts(e, tz=UTC), returns=list,
           args=host_sources()),
    # plans and their files
    Target(envfile.parse_env_file, "envfile", raises=(envfile.EnvError,)),
    Target(envfile.parse_record, "envfile", raises=(envfile.EnvError,)),
    Target(timeutil.parse_tz, "system", _each_line_raising(timeutil.parse_tz, ValueError), returns=list),
    Target(timeutil.parse_time, "system", _each_line_raising(timeutil.parse_time, ValueError), returns=list),
    # -e values; '@' dropped so a fuzzed value never names a file to read
    Target(runbook.parse_extra_vars, "envfile",
           _each_line_raising(lambda v: runbook.parse_extra_vars([v.lstrip("@")]), runbook.RunbookError),
           returns=list),
]
