#include "store/batch_codec.h"

#include <cstdint>
#include <cstring>

#include "base/codes.h"
#include "spec/phase.h"

namespace rsl::store {

namespace {

// 1: the first form. A reader meeting another refuses the record (an older binary replaying
// a newer one's log).
constexpr unsigned char kFormat = 1;

class Writer {
 public:
  explicit Writer(std::string* out) : out_(out) {}
  void U(uint64_t v) {
    char buf[10];
    int n = 0;
    while (v >= 0x80) {
      buf[n++] = static_cast<char>(v | 0x80);
      v >>= 7;
    }
    buf[n++] = static_cast<char>(v);
    out_->append(buf, size_t(n));
  }
  void I(int64_t v) { U((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63)); }
  void S(std::string_view s) {
    U(s.size());
    out_->append(s.data(), s.size());
  }

 private:
  std::string* out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : p_(in.data()), end_(in.data() + in.size()) {}
  bool ok() const { return ok_; }
  bool done() const { return p_ == end_; }
  uint64_t U() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) return Fail();
      auto byte = static_cast<unsigned char>(*p_++);
      v |= uint64_t(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return v;
    }
    return Fail();
  }
  int64_t I() {
    uint64_t u = U();
    return static_cast<int64_t>((u >> 1) ^ (~(u & 1) + 1));
  }
  int Int() {
    int64_t v = I();
    if (v < INT32_MIN || v > INT32_MAX) return static_cast<int>(Fail());
    return static_cast<int>(v);
  }
  std::string_view View() {
    uint64_t n = U();
    if (!ok_ || n > uint64_t(end_ - p_)) return Fail(), std::string_view();
    std::string_view s(p_, size_t(n));
    p_ += n;
    return s;
  }
  void S(std::string* out) { out->assign(View()); }
  //! A row count: each row takes at least one byte, so more rows than bytes left is damage
  //! (and no vector is sized from a damaged count).
  size_t Count() {
    uint64_t n = U();
    if (!ok_ || n > uint64_t(end_ - p_)) return static_cast<size_t>(Fail());
    return size_t(n);
  }
  template <class T, class ParseFn>
  void Phase(T* out, ParseFn parse) {
    auto r = parse(View());
    if (!r.ok()) {
      Fail();
      return;
    }
    *out = *r;
  }
  uint64_t Fail() {
    ok_ = false;
    p_ = end_;
    return 0;
  }

 private:
  const char* p_;
  const char* end_;
  bool ok_ = true;
};

}  // namespace

void EncodeBatchRows(const Batch& b, std::string* out) {
  Writer w(out);
  out->push_back(static_cast<char>(kFormat));
  w.U(b.runs.size());
  for (const Run& r : b.runs) {
    w.S(r.id), w.S(r.workload_id), w.S(r.name), w.S(r.namespace_), w.S(spec::Name(r.phase));
    w.S(r.failure_code), w.S(r.failure_message), w.I(r.created_at), w.I(r.started_at);
    w.I(r.finished_at), w.S(r.run_dir), w.S(r.admission_report_json), w.S(r.commit_state);
    w.S(r.committed_uri), w.I(r.collected_at);
  }
  w.U(b.steps.size());
  for (const Step& s : b.steps) {
    w.S(s.run_id), w.S(s.name), w.I(s.index), w.S(spec::Name(s.phase)), w.I(s.attempts);
    w.I(s.retries_used), w.S(s.attempt_id), w.S(s.node), w.I(s.exit_code), w.I(s.signal);
    w.I(s.wall_ms), w.I(s.cpu_ms), w.I(s.peak_memory_bytes), w.I(s.peak_cpu_millicores);
    w.I(s.started_at), w.I(s.finished_at), w.I(s.next_attempt_at), w.S(s.failure_code);
    w.S(s.message), w.S(s.metrics_json), w.S(s.progress), w.S(s.output_dir);
  }
  w.U(b.attempts.size());
  for (const Attempt& a : b.attempts) {
    w.S(a.id), w.S(a.run_id), w.S(a.step), w.I(a.number), w.S(a.launch_json);
    w.S(spec::Name(a.state)), w.S(a.exit_kind), w.I(a.created_at), w.I(a.finished_at);
  }
  w.U(b.events.size());
  for (const Event& e : b.events) {
    w.I(e.seq), w.S(e.run_id), w.S(e.step), w.S(e.type), w.S(e.reason), w.S(e.message);
    w.I(e.time);
  }
  w.U(b.artifacts.size());
  for (const Artifact& a : b.artifacts) {
    w.S(a.run_id), w.S(a.step), w.S(a.uri), w.I(a.bytes), w.S(a.kind), w.S(a.digest);
  }
  w.U(b.lineage.size());
  for (const LineageEdge& e : b.lineage) {
    w.S(e.run_id), w.S(e.from), w.S(e.to), w.S(e.relation), w.S(e.from_json);
  }
}

Status DecodeBatchRows(std::string_view in, Batch* out) {
  if (in.empty() || static_cast<unsigned char>(in[0]) != kFormat) {
    return Error(codes::kIoError, "transition record of an unknown form")
        .Value(in.empty() ? "(empty)" : std::to_string(static_cast<unsigned char>(in[0])))
        .Hint("it was written by another version of RSL; run that version to apply its log");
  }
  Reader r(in.substr(1));
  for (size_t n = r.Count(); r.ok() && n > 0; --n) {
    Run& x = out->runs.emplace_back();
    r.S(&x.id), r.S(&x.workload_id), r.S(&x.name), r.S(&x.namespace_);
    r.Phase(&x.phase, spec::ParseRunPhase);
    r.S(&x.failure_code), r.S(&x.failure_message), x.created_at = r.I(), x.started_at = r.I();
    x.finished_at = r.I(), r.S(&x.run_dir), r.S(&x.admission_report_json);
    r.S(&x.commit_state), r.S(&x.committed_uri), x.collected_at = r.I();
  }
  for (size_t n = r.Count(); r.ok() && n > 0; --n) {
    Step& x = out->steps.emplace_back();
    r.S(&x.run_id), r.S(&x.name), x.index = r.Int();
    r.Phase(&x.phase, spec::ParseStepPhase);
    x.attempts = r.Int(), x.retries_used = r.Int(), r.S(&x.attempt_id), r.S(&x.node);
    x.exit_code = r.Int(), x.signal = r.Int(), x.wall_ms = r.I(), x.cpu_ms = r.I();
    x.peak_memory_bytes = r.I(), x.peak_cpu_millicores = r.I(), x.started_at = r.I();
    x.finished_at = r.I(), x.next_attempt_at = r.I(), r.S(&x.failure_code), r.S(&x.message);
    r.S(&x.metrics_json), r.S(&x.progress), r.S(&x.output_dir);
  }
  for (size_t n = r.Count(); r.ok() && n > 0; --n) {
    Attempt& x = out->attempts.emplace_back();
    r.S(&x.id), r.S(&x.run_id), r.S(&x.step), x.number = r.Int(), r.S(&x.launch_json);
    r.Phase(&x.state, spec::ParseAttemptPhase);
    r.S(&x.exit_kind), x.created_at = r.I(), x.finished_at = r.I();
  }
  for (size_t n = r.Count(); r.ok() && n > 0; --n) {
    Event& x = out->events.emplace_back();
    x.seq = r.I(), r.S(&x.run_id), r.S(&x.step), r.S(&x.type), r.S(&x.reason);
    r.S(&x.message), x.time = r.I();
  }
  for (size_t n = r.Count(); r.ok() && n > 0; --n) {
    Artifact& x = out->artifacts.emplace_back();
    r.S(&x.run_id), r.S(&x.step), r.S(&x.uri), x.bytes = r.I(), r.S(&x.kind), r.S(&x.digest);
  }
  for (size_t n = r.Count(); r.ok() && n > 0; --n) {
    LineageEdge& x = out->lineage.emplace_back();
    r.S(&x.run_id), r.S(&x.from), r.S(&x.to), r.S(&x.relation), r.S(&x.from_json);
  }
  if (!r.ok() || !r.done()) {
    return Error(codes::kIoError, "damaged transition record")
        .Value(std::to_string(in.size()) + " bytes")
        .Hint("a record's fields run past its end, or a phase name is unknown");
  }
  return Status::Ok();
}

}  // namespace rsl::store
