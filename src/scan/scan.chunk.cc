// scan.chunk.cc — Chunker: an io::ByteSink that frames io's bytes (read into the chunk,
// copied, or a mapped window) into chunks of whole lines of one source, about chunk_bytes
// each, numbered in the order phase B takes them; --host/--unit blank other hosts' lines.
#include <algorithm>

#include "scan/scan_internal.h"

namespace ff::scan::detail {

Chunker::Chunker(const Engine& engine, const ScanOptions& opt, std::function<void(std::unique_ptr<Chunk>)> emit,
                 std::function<std::unique_ptr<Chunk>()> fresh)
    : engine_(engine), opt_(opt), emit_(std::move(emit)), fresh_(std::move(fresh)) {}

void Chunker::begin(const io::SourceInfo& info) {
  auto src = std::make_shared<SourceCtx>();
  src->index = next_source_++;
  src->info = info;
  src->name_origin = engine_.origin_of_source(info.name);
  src_ = src;
  framer_ = record::LineFramer(opt_.max_line);
  source_bytes_ = 0;
  send(take(Chunk::Kind::kBegin));
  cur_ = take(Chunk::Kind::kLines);
}

char* Chunker::data_buffer(size_t size) {
  if (opt_.chunk_bytes < kZeroCopyMin) return nullptr;  // small chunks: copy (tests)
  if (cur_->bytes.size() >= opt_.chunk_bytes || cur_->bytes.capacity() - cur_->bytes.size() < size) flush();
  cur_->bytes.reserve(cur_->bytes.size() + std::max(size, opt_.chunk_bytes + size));
  return cur_->bytes.data() + cur_->bytes.size();
}

void Chunker::data(std::string_view piece) {
  source_bytes_ += piece.size();
  total_bytes_ += piece.size();
  size_t base;
  if (piece.data() == cur_->bytes.data() + cur_->bytes.size()) {
    base = cur_->bytes.size();  // io read straight into the chunk
    cur_->bytes.commit(piece.size());
  } else {
    base = cur_->bytes.size();
    cur_->bytes.append(piece);
  }
  Chunk* c = cur_.get();
  framer_.feed(piece, [&](const record::RawLine& l) { add_line(*c, l, piece, base); });
  if (opt_.progress) opt_.progress(total_bytes_);
  // Without zero-copy reads, chunks are cut here (data_buffer cuts them otherwise).
  if (opt_.chunk_bytes < kZeroCopyMin && cur_->bytes.size() >= opt_.chunk_bytes) flush();
}

void Chunker::data_mapped(std::string_view window, std::shared_ptr<const io::MappedWindow> keep) {
  flush();
  for (size_t pos = 0; pos < window.size();) {
    const std::string_view piece = window.substr(pos, opt_.chunk_bytes);
    source_bytes_ += piece.size();
    total_bytes_ += piece.size();
    Chunk* c = cur_.get();
    c->mapped = window.data();
    c->keep = keep;
    framer_.feed(piece, [&](const record::RawLine& l) { add_line(*c, l, piece, pos); });
    if (opt_.progress) opt_.progress(total_bytes_);
    pos += piece.size();
    flush();
  }
  // The framer read every byte of the window (a line still open is copied out of it):
  // a window that shrank meanwhile may be one no chunk points into.
  shrank_ = shrank_ || keep->shrank();
}

void Chunker::end(const io::SourceInfo&, const Status& status) {
  Chunk* c = cur_.get();
  framer_.finish([&](const record::RawLine& l) { add_line(*c, l, {}, 0); });
  flush();
  cur_.reset();
  auto e = take(Chunk::Kind::kEnd);
  e->status = status;
  e->source_bytes = source_bytes_;
  e->total_lines = framer_.lines();
  e->cut_lines = framer_.cut_lines();
  e->shrank = shrank_;
  shrank_ = false;
  send(std::move(e));
  src_.reset();
}

void Chunker::add_line(Chunk& c, const record::RawLine& l, std::string_view piece, size_t base) {
  LineRef ref;
  ref.offset = l.offset;
  ref.len = static_cast<uint32_t>(l.bytes.size());
  ref.plain = l.plain ? 1 : 0;
  if (!opt_.only_host.empty() || !opt_.only_unit.empty()) {
    // --host / --unit: a line another host or unit wrote is kept as an empty line, so
    // the others keep their line numbers; a line that names neither is kept.
    record::Record rec;
    engine_.prefixes().parse(ref.plain ? l.bytes : record::clean_line_view(l.bytes, filter_buf_), rec);
    if (!keeps(rec)) {
      ref.len = 0;
      ref.plain = 1;
      ++left_out_;
    }
  }
  const char* p0 = piece.data();
  if (!l.bytes.empty() && !piece.empty() && l.bytes.data() >= p0 &&
      l.bytes.data() + l.bytes.size() <= p0 + piece.size()) {
    ref.pos = static_cast<uint32_t>(base + static_cast<size_t>(l.bytes.data() - p0));
    ref.side = 0;
  } else {
    ref.pos = static_cast<uint32_t>(c.side.size());
    ref.side = 1;
    c.side.append(l.bytes);
  }
  if (c.lines.empty()) c.first_line = l.number;
  c.lines.push_back(ref);
}

bool Chunker::keeps(const record::Record& rec) const {
  if (!opt_.only_host.empty() && !rec.node.empty() && !same_host(rec.node, opt_.only_host)) return false;
  if (!opt_.only_unit.empty() && !rec.program.empty() && !same_unit(rec.program, opt_.only_unit)) return false;
  return true;
}

bool Chunker::same_host(std::string_view a, std::string_view b) {
  if (a == b) return true;
  const std::string_view s = a.size() < b.size() ? a : b, l = a.size() < b.size() ? b : a;
  return l.size() > s.size() && starts_with(l, s) && l[s.size()] == '.';
}

bool Chunker::same_unit(std::string_view a, std::string_view b) {
  if (a == b) return true;
  const std::string_view s = a.size() < b.size() ? a : b, l = a.size() < b.size() ? b : a;
  return starts_with(l, s) && l.substr(s.size()) == ".service";
}

std::unique_ptr<Chunk> Chunker::take(Chunk::Kind kind) {
  auto c = fresh_();
  c->reset(kind);
  c->src = src_;
  return c;
}

void Chunker::send(std::unique_ptr<Chunk> c) {
  c->seq = next_seq_++;
  emit_(std::move(c));
}

void Chunker::flush() {
  if (cur_->lines.empty()) {
    cur_->bytes.clear();  // bytes of a line still pending in the framer: it keeps its copy
    cur_->side.clear();
    cur_->release_mapping();
    return;
  }
  send(std::move(cur_));
  cur_ = take(Chunk::Kind::kLines);
}

}  // namespace ff::scan::detail
