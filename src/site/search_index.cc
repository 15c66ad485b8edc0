#include "site/search_index.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <unordered_map>

namespace ff::site {

namespace {

// Kept in the same order as STOP in assets/search.js.
const std::set<std::string, std::less<>>& stop_words() {
  static const std::set<std::string, std::less<>> kStop = {
      "an",   "and",  "are", "as",   "at",   "be",   "been", "by",   "for", "from", "had",
      "has",  "have", "in",  "into", "is",   "it",   "its",  "of",   "on",  "or",   "than",
      "that", "the",  "then", "this", "to",  "was",  "were", "with",
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
        if (rx[j] == '\\') ++j;
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

KeywordIndex::KeywordIndex(const kb::KnowledgeBase& kb) {
  uint64_t total = 0;
  for (size_t d = 0; d < kb.entries.size(); ++d) {
    const kb::Entry& e = kb.entries[d];
    ids_.push_back(e.id);
    std::map<std::string, uint32_t> tf;
    uint32_t len = 0;
    auto add = [&](std::string_view text, int weight) {
      for (auto& t : tokenize(text)) {
        tf[t] += static_cast<uint32_t>(weight);
        len += static_cast<uint32_t>(weight);
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
    hits[i].score = round6(hits[i].score);
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

nlohmann::ordered_json KeywordIndex::to_json() const {
  nlohmann::ordered_json j;
  j["k1"] = kBm25K1;
  j["b"] = kBm25B;
  j["n"] = ids_.size();
  j["len"] = len_;
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
