#include "record/prefix_fast.h"

namespace ff::record::detail {
namespace {

struct Known {
  std::string_view id;
  std::string_view regex;
  FastKind kind;
};

// The regexes exactly as kb/formats/prefixes.yaml writes them.
constexpr Known kKnown[] = {
    {"mpirun-tag-output", R"(\[\d+,(?P<rank>\d+)\]<(?:stdout|stderr)>:)", FastKind::k_mpirun_tag_output},
    {"torchrun-rank", R"(\[(?:[A-Za-z_][A-Za-z_-]*?)?(?P<rank>\d+)\]:[ ]?)", FastKind::k_torchrun_rank},
    {"ray-actor", R"(\((?P<actor>[A-Za-z_][\w.]*) pid=(?P<pid>\d+)(?:, ip=(?P<node>[0-9a-fA-F.:]+))?\) )",
     FastKind::k_ray_actor},
    {"k8s-cri", R"((?P<time>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)) (?:stdout|stderr) [FP] )",
     FastKind::k_k8s_cri},
    {"syslog-5424",
     R"((?:<\d{1,3}>)?\d{1,3} (?P<time>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)) (?P<node>[\w.-]+) (?P<program>[\w./-]+) (?:(?P<pid>\d+)|-) [\w./-]+ (?:-|(?:\[[^\]]*\])+) )",
     FastKind::k_syslog_5424},
    {"syslog-iso",
     R"((?P<time>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}[+-]\d\d:\d\d) (?P<node>[\w.-]+) (?P<program>[\w./-]+)(?:\[(?P<pid>\d+)\]:?|:) )",
     FastKind::k_syslog_iso},
    {"kubectl-prefix", R"(\[pod/(?P<node>[a-z0-9][a-z0-9.-]*)/[a-z0-9-]*\] )", FastKind::k_kubectl_prefix},
    {"srun-label", R"( {0,4}(?P<rank>\d{1,5}): )", FastKind::k_srun_label},
    {"pdsh-host", R"((?P<node>[a-z][a-z0-9-]*[0-9][a-z0-9.-]*): )", FastKind::k_pdsh_host},
    {"iso-time", R"(\[?(?P<time>\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?)\]?(?: \|)?:? )",
     FastKind::k_iso_time},
    {"level-word", R"(\[?(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\]?(?: \||:)? +)",
     FastKind::k_level_word},
    {"python-logging-basic", R"((?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL):(?:[\w.]+):)",
     FastKind::k_python_logging_basic},
    {"vllm",
     R"((?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) (?P<time>\d\d-\d\d \d\d:\d\d:\d\d)(?:\.\d+)? [\w./-]+:\d+\] )",
     FastKind::k_vllm},
    {"detectron2", R"((?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) \[(?P<time>\d\d/\d\d \d\d:\d\d:\d\d) [\w.]+\]: )",
     FastKind::k_detectron2},
    {"glog", R"(\[?(?P<level>[IWEF])(?P<time>\d{4} \d\d:\d\d:\d\d\.\d+) +\d+ [\w./-]+:\d+\]\]? ?)", FastKind::k_glog},
    {"c10-bracket", R"(\[(?P<level>[IWEF]) [\w./-]+:\d+\] )", FastKind::k_c10_bracket},
    {"dmesg", R"(\[ *(?P<time>\d+\.\d+)\] )", FastKind::k_dmesg},
    {"syslog",
     R"((?P<time>[A-Z][a-z]{2} [ 0-3]\d \d\d:\d\d:\d\d) (?P<node>[\w.-]+) (?P<program>[\w./-]+)(?:\[(?P<pid>\d+)\]:?|:) )",
     FastKind::k_syslog},
    {"bracket-time", R"(\[(?P<time>\d\d:\d\d:\d\d(?:\.\d+)?)\]:? )", FastKind::k_bracket_time},
    {"rank-tag", R"(\[[Rr]ank ?(?P<rank>\d+)\]:? ?)", FastKind::k_rank_tag},
    {"nccl-line", R"((?P<node>[\w.-]+):(?P<pid>\d+):(?P<tid>\d+) \[(?P<gpu>\d+)\] )", FastKind::k_nccl_line},
};

}  // namespace

FastKind fast_kind_for(std::string_view id, std::string_view regex) {
  for (const Known& k : kKnown) {
    if (k.id == id && k.regex == regex) return k.kind;
  }
  return FastKind::kNone;
}

}  // namespace ff::record::detail
