#include "site/search_index.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <unordered_map>

#include <yaml-cpp/yaml.h>

namespace ff::site {

namespace {

// Kept in the same order as STOP in assets/search.js.
const std::set<std::string, std::less<>>& stop_words() {
  static const std::set<std::string, std::less<>> kStop = {
      "an", "and", "are", "as", "at", "be", "been", "by",   "for", "from", "had",  "has", "have", "in",   "into",
      "is", "it",  "its", "of", "on", "or", "than", "that", "the", "then", "this", "to",  "was",  "were", "with",
  };
  return kStop;
}

bool is_alnum(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

void flush_token(std::string& cur, std::vector<std::string>& out) {
  if (cur.size() >= 2) {
    bool letter = std::any_of(cur.begin(), cur.end(), [](char c) { return c >= 'a' && c <= 'z'; });
    if (letter || cur.size() <= 4) {
      if (letter && cur.size() > 3 && cur.back() == 's') {
        char prev = cur[cur.size() - 2];
        if (prev != 's' && prev != 'u' && prev != 'i') cur.pop_back();
      }
      if (!stop_words().count(cur)) out.push_back(cur);
    }
  }
  cur.clear();
}

double round6(double x) { return std::round(x * 1e6) / 1e6; }

}  // namespace

std::vector<std::string> tokenize(std::string_view text) {
  std::vector<std::string> out;
  std::string cur;
  for (unsigned char c : text) {
    if (is_alnum(c)) {
      cur.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c));
    } else {
      flush_token(cur, out);
    }
  }
  flush_token(cur, out);
  return out;
}

std::string keyword_snippet(std::string_view text, const std::vector<std::string>& terms) {
  const std::set<std::string> want(terms.begin(), terms.end());
  // Sentences: split after . ! or ? followed by white space.
  std::vector<std::string_view> sentences;
  auto skip_space = [&](size_t at) {
    while (at < text.size() && std::isspace(static_cast<unsigned char>(text[at]))) ++at;
    return at;
  };
  size_t from = skip_space(0);
  for (size_t i = from; i + 1 < text.size(); ++i) {
    if ((text[i] == '.' || text[i] == '!' || text[i] == '?') && std::isspace(static_cast<unsigned char>(text[i + 1]))) {
      sentences.push_back(text.substr(from, i + 1 - from));
      from = skip_space(i + 1);
      i = from;
      if (i > 0) --i;
    }
  }
  if (from < text.size()) sentences.push_back(text.substr(from));
  if (sentences.empty()) return std::string();
  std::string_view best = sentences.front();
  size_t best_score = 0;
  for (std::string_view sentence : sentences) {
    std::set<std::string> got;
    for (const auto& t : tokenize(sentence))
      if (want.count(t)) got.insert(t);
    if (got.size() > best_score) best = sentence, best_score = got.size();
  }
  std::string out(best);
  // A long sentence: about 170 bytes from 40 before the first term it holds.
  if (out.size() > 180) {
    std::string lower = out;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    size_t at = std::string::npos;
    for (const auto& t : want) at = std::min(at, lower.find(t));
    size_t start = at == std::string::npos ? 0 : (at > 40 ? at - 40 : 0);
    start = std::min(start, out.size() - 170);
    while (start > 0 && (static_cast<unsigned char>(out[start]) & 0xC0) == 0x80) --start;  // whole UTF-8 characters
    size_t len = 170;
    while (start + len < out.size() && (static_cast<unsigned char>(out[start + len]) & 0xC0) == 0x80) ++len;
    out = (start > 0 ? "\u2026" : "") + out.substr(start, len) + "\u2026";
  }
  return out;
}

std::vector<std::string> regex_literals(std::string_view rx) {
  std::vector<std::string> out;
  std::string run;
  auto cut = [&] {
    if (run.size() >= 3) out.push_back(run);
    run.clear();
  };
  for (size_t i = 0; i < rx.size(); ++i) {
    char c = rx[i];
    if (c == '\\' && i + 1 < rx.size()) {
      char n = rx[++i];
      if (n == 'Q') {  // \Q...\E quotes literally
        size_t end = rx.find("\\E", i + 1);
        run += rx.substr(i + 1, end == std::string_view::npos ? std::string_view::npos : end - i - 1);
        i = end == std::string_view::npos ? rx.size() : end + 1;
      } else if (n == 'p' || n == 'P') {
        if (i + 1 < rx.size() && rx[i + 1] == '{') {
          size_t e = rx.find('}', i);
          i = e == std::string_view::npos ? rx.size() : e;
        } else {
          ++i;
        }
        cut();
      } else if (is_alnum(static_cast<unsigned char>(n))) {
        cut();  // \d \w \s \b \n \x.. and friends
        if (n == 'x' && i + 1 < rx.size() && rx[i + 1] == '{') {
          size_t e = rx.find('}', i);
          i = e == std::string_view::npos ? rx.size() : e;
        }
      } else {
        run.push_back(n);
      }
    } else if (c == '[') {
      size_t j = i + 1;
      if (j < rx.size() && rx[j] == '^') ++j;
      if (j < rx.size() && rx[j] == ']') ++j;
      while (j < rx.size() && rx[j] != ']') {
        if (rx[j] == '\\')
          ++j;
        else if (rx[j] == '[' && j + 1 < rx.size() && rx[j + 1] == ':') {
          size_t e = rx.find(":]", j + 2);
          if (e != std::string_view::npos) j = e + 1;
        }
        ++j;
      }
      i = j;
      cut();
    } else if (c == '(') {
      if (i + 1 < rx.size() && rx[i + 1] == '?') {
        size_t j = i + 2;
        if (j < rx.size() && (rx[j] == 'P' || rx[j] == '<')) {
          size_t e = rx.find('>', j);
          j = e == std::string_view::npos ? rx.size() : e + 1;
        } else {
          while (j < rx.size() && rx[j] != ':' && rx[j] != ')') ++j;
          j = std::min(rx.size(), j + 1);
        }
        i = j - 1;
      }
      cut();
    } else if (c == '*' || c == '?' || c == '{') {
      // The quantified atom may be absent: it is not part of a literal run.
      if (!run.empty()) run.pop_back();
      if (c == '{') {
        size_t e = rx.find('}', i);
        if (e != std::string_view::npos) i = e;
      }
      cut();
    } else if (c == '+' || c == ')' || c == '|' || c == '^' || c == '$' || c == '.') {
      cut();
    } else {
      run.push_back(c);
    }
  }
  cut();
  return out;
}

Result<SearchData> parse_search_data(std::string_view yaml) {
  SearchData data;
  try {
    YAML::Node doc = YAML::Load(std::string(yaml));
    if (!doc || doc.IsNull()) return data;
    if (!doc.IsMap()) return make_error(ErrorCode::kFormat, "search data: must be a YAML mapping");
    if (YAML::Node syn = doc["synonyms"]) {
      if (!syn.IsMap())
        return make_error(ErrorCode::kFormat, "search data: synonyms must map a word to a list of phrases");
      for (const auto& kv : syn) {
        const std::string word = kv.first.as<std::string>();
        auto term = tokenize(word);
        if (term.size() != 1)
          return make_error(ErrorCode::kFormat,
                            "search data: synonyms." + word + ": the word must be one search token");
        if (!kv.second.IsSequence())
          return make_error(ErrorCode::kFormat, "search data: synonyms." + word + " must be a list of phrases");
        SearchData::Synonym s{term[0], {}};
        for (const auto& ph : kv.second) {
          auto tokens = tokenize(ph.as<std::string>());
          if (tokens.empty() || tokens == term)
            return make_error(ErrorCode::kFormat, "search data: synonyms." + word + ": '" + ph.as<std::string>() +
                                                      "' has no other search token");
          s.phrases.push_back(std::move(tokens));
        }
        data.synonyms.push_back(std::move(s));
      }
    }
    if (YAML::Node lw = doc["linked_weight"]) {
      data.linked_weight = lw.as<double>();
      if (!(data.linked_weight >= 0 && data.linked_weight <= 10))
        return make_error(ErrorCode::kFormat, "search data: linked_weight must be in [0, 10]");
    }
    if (YAML::Node sw = doc["severity_weight"]) {
      if (!sw.IsMap())
        return make_error(ErrorCode::kFormat, "search data: severity_weight must map a severity to a number");
      for (const auto& kv : sw) {
        double w = kv.second.as<double>();
        if (!(w > 0 && w <= 10))
          return make_error(ErrorCode::kFormat,
                            "search data: severity_weight." + kv.first.as<std::string>() + " must be in (0, 10]");
        data.severity_weight[kv.first.as<std::string>()] = w;
      }
    }
  } catch (const YAML::Exception& ex) {  // a parse error or a value of the wrong type
    return make_error(ErrorCode::kFormat, std::string("search data: ") + ex.what());
  }
  return data;
}

const SearchData& builtin_search_data() {
  static const SearchData kData = [] {
    for (const auto& f : kb::embedded_files()) {
      if (f.path != "formats/search.yaml") continue;
      auto r = parse_search_data(f.content);
      if (r.ok()) return std::move(r.value());
    }
    return SearchData{};
  }();
  return kData;
}

KeywordIndex::KeywordIndex(const kb::KnowledgeBase& kb, const SearchData& data) {
  // How many other entries name each one in `related` or `lookalikes`.
  std::unordered_map<std::string, uint32_t> linked;
  for (const auto& e : kb.entries) {
    std::set<std::string> named(e.related.begin(), e.related.end());
    for (const auto& l : e.lookalikes) named.insert(l.id);
    named.erase(e.id);
    for (const auto& id : named) ++linked[id];
  }
  uint64_t total = 0;
  for (size_t d = 0; d < kb.entries.size(); ++d) {
    const kb::Entry& e = kb.entries[d];
    ids_.push_back(e.id);
    auto sev = data.severity_weight.find(e.severity);
    auto in = linked.find(e.id);
    boost_.push_back((sev == data.severity_weight.end() ? 1.0 : sev->second) *
                     (1.0 + data.linked_weight * std::log1p(in == linked.end() ? 0.0 : in->second)));
    std::map<std::string, uint32_t> tf;
    uint32_t len = 0;
    auto add = [&](std::string_view text, int weight) {
      const auto tokens = tokenize(text);
      for (const auto& t : tokens) {
        tf[t] += static_cast<uint32_t>(weight);
        len += static_cast<uint32_t>(weight);
      }
      // A synonym's phrase stands for its word (the document's length is left as it was).
      for (const auto& syn : data.synonyms) {
        for (const auto& ph : syn.phrases) {
          if (ph.size() > tokens.size()) continue;
          for (size_t i = 0; i + ph.size() <= tokens.size(); ++i)
            if (std::equal(ph.begin(), ph.end(), tokens.begin() + static_cast<long>(i)))
              tf[syn.term] += static_cast<uint32_t>(weight);
        }
      }
    };
    add(e.id, kWeightId);
    add(e.title, kWeightTitle);
    for (const auto& t : e.tags) add(t, kWeightTags);
    add(e.summary, kWeightSummary);
    for (const auto& s : e.symptoms) {
      add(s.symptom, kWeightSymptoms);
      add(s.why, kWeightSymptoms);
    }
    for (const auto& p : e.patterns) {
      if (!p.literal.empty()) {
        add(p.literal, kWeightLiterals);
      } else {
        for (const auto& lit : regex_literals(p.regex)) add(lit, kWeightLiterals);
      }
    }
    for (const auto& [term, n] : tf) postings_[term].emplace_back(static_cast<uint32_t>(d), n);
    len_.push_back(len);
    total += len;
  }
  avgdl_ = len_.empty() ? 0 : static_cast<double>(total) / static_cast<double>(len_.size());
}

std::vector<KeywordIndex::Hit> KeywordIndex::search(std::string_view query) const {
  std::vector<std::string> terms;
  for (auto& t : tokenize(query)) {
    if (std::find(terms.begin(), terms.end(), t) == terms.end()) terms.push_back(std::move(t));
  }
  const double n = static_cast<double>(ids_.size());
  std::unordered_map<uint32_t, size_t> slot;
  std::vector<Hit> hits;
  std::vector<std::vector<std::pair<double, std::string>>> contrib;
  for (const auto& term : terms) {
    auto it = postings_.find(term);
    if (it == postings_.end()) continue;
    const double df = static_cast<double>(it->second.size());
    const double idf = std::log(1.0 + (n - df + 0.5) / (df + 0.5));
    for (const auto& [doc, tf] : it->second) {
      const double f = tf;
      const double s = idf * f * (kBm25K1 + 1.0) / (f + kBm25K1 * (1.0 - kBm25B + kBm25B * len_[doc] / avgdl_));
      auto [pos, fresh] = slot.emplace(doc, hits.size());
      if (fresh) {
        hits.push_back({doc, 0.0, {}});
        contrib.emplace_back();
      }
      hits[pos->second].score += s;
      contrib[pos->second].emplace_back(s, term);
    }
  }
  for (size_t i = 0; i < hits.size(); ++i) {
    hits[i].score = round6(hits[i].score * boost_[hits[i].entry]);
    auto& c = contrib[i];
    std::stable_sort(c.begin(), c.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (auto& [s, t] : c) hits[i].terms.push_back(std::move(t));
  }
  std::sort(hits.begin(), hits.end(), [&](const Hit& a, const Hit& b) {
    if (a.score != b.score) return a.score > b.score;
    return ids_[a.entry] < ids_[b.entry];
  });
  return hits;
}

size_t KeywordIndex::relevant(const std::vector<double>& scores) {
  if (scores.empty()) return 0;
  const double floor = round6(scores.front() * kRelevant);
  size_t n = 0;
  while (n < scores.size() && scores[n] >= floor) ++n;
  return n;
}

nlohmann::ordered_json KeywordIndex::to_json() const {
  nlohmann::ordered_json j;
  j["k1"] = kBm25K1;
  j["cut"] = kRelevant;
  j["b"] = kBm25B;
  j["n"] = ids_.size();
  j["len"] = len_;
  j["boost"] = boost_;
  nlohmann::ordered_json post = nlohmann::ordered_json::object();
  for (const auto& [term, list] : postings_) {
    auto& arr = post[term] = nlohmann::ordered_json::array();
    for (const auto& [doc, tf] : list) {
      arr.push_back(doc);
      arr.push_back(tf);
    }
  }
  j["post"] = std::move(post);
  return j;
}

}  // namespace ff::site
