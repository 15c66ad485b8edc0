// firstfault encyclopedia: client-side search. No dependencies, works from file://.
//
// It ranks as `firstfault search` does (src/app/commands.search.cc, src/site/search_index.cc):
//   1. each line of the query is cleaned (ANSI, carriage-return residue, NUL), its prefixes
//      (rank labels, timestamps, levels: kb/formats/prefixes.yaml) peeled, and matched
//      against every pattern; the most specific entry of each line comes first (highest
//      priority, then the longest match in UTF-8 bytes, then the id), then the other
//      entries that matched;
//   2. the remaining entries by BM25 over the index built at generation time (the synonyms
//      of kb/formats/search.yaml are already in its postings), times each entry's
//      severity weight.
// tokenize() must stay identical to site::tokenize() in search_index.cc.
//
// The list shows the good matches (every pattern match; keyword hits scoring at least
// index.bm25.cut of the best one: site::KeywordIndex::kRelevant, as `firstfault search`'s
// "relevant" counts them) and says how many weaker ones there are; each result shows the
// text it matched: the pasted line with the match marked, or the entry's quick answer
// around the query's words.
(function () {
  'use strict';

  var STOP = new Set(['an', 'and', 'are', 'as', 'at', 'be', 'been', 'by', 'for', 'from', 'had',
    'has', 'have', 'in', 'into', 'is', 'it', 'its', 'of', 'on', 'or', 'than',
    'that', 'the', 'then', 'this', 'to', 'was', 'were', 'with']);

  function isAlnum(c) {
    return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57);
  }

  function flushToken(cur, out) {
    if (cur.length >= 2) {
      var letter = /[a-z]/.test(cur);
      if (letter || cur.length <= 4) {
        if (letter && cur.length > 3 && cur.charAt(cur.length - 1) === 's') {
          var prev = cur.charAt(cur.length - 2);
          if (prev !== 's' && prev !== 'u' && prev !== 'i') cur = cur.slice(0, -1);
        }
        if (!STOP.has(cur)) out.push(cur);
      }
    }
  }

  function tokenize(text) {
    var out = [];
    var cur = '';
    for (var i = 0; i < text.length; i++) {
      var c = text.charCodeAt(i);
      if (isAlnum(c)) {
        cur += (c >= 65 && c <= 90) ? String.fromCharCode(c + 32) : text.charAt(i);
      } else {
        flushToken(cur, out);
        cur = '';
      }
    }
    flushToken(cur, out);
    return out;
  }

  // record::clean_line: drop trailing CRs, keep what follows the last CR, strip ANSI
  // escape sequences (CSI, OSC, two-byte) and NUL bytes.
  var ANSI = /\x1b\[[^\x40-\x7e]*[\x40-\x7e]?|\x1b\](?:[^\x07\x1b]|\x1b(?!\\))*(?:\x07|\x1b\\)?|\x1b[\s\S]?|\x00/g;
  function cleanLine(raw) {
    raw = raw.replace(/\r+$/, '');
    var cr = raw.lastIndexOf('\r');
    if (cr >= 0) raw = raw.slice(cr + 1);
    return raw.replace(ANSI, '');
  }

  var utf8 = typeof TextEncoder !== 'undefined' ? new TextEncoder() : null;
  function byteLength(s) {
    return utf8 ? utf8.encode(s).length : s.length;
  }

  function compile(index) {
    var bad = [];
    var prefixes = [];
    index.prefixes.forEach(function (p) {
      try {
        prefixes.push({ re: new RegExp(p[0], p[1] + 'y'), consume: p[2] });
      } catch (e) {
        bad.push('prefix ' + p[0]);
      }
    });
    var patterns = [];
    index.patterns.forEach(function (p) {
      try {
        patterns.push({ entry: p[0], id: p[1], re: new RegExp(p[2], p[3]), priority: p[4] });
      } catch (e) {
        bad.push(index.entries[p[0]][0] + ':' + p[1] + ': ' + e.message);
      }
    });
    var len = index.bm25.len;
    var total = 0;
    for (var i = 0; i < len.length; i++) total += len[i];
    return { index: index, prefixes: prefixes, patterns: patterns, bad: bad, avgdl: len.length ? total / len.length : 0 };
  }

  // record::PrefixParser::parse: formats tried in order at the current position, repeatedly.
  function peel(db, line) {
    var pos = 0;
    var appliedNonConsuming = false;
    for (var round = 0; round < 12; round++) {
      var any = false;
      var rest = line.slice(pos);
      for (var k = 0; k < db.prefixes.length; k++) {
        var f = db.prefixes[k];
        if (!f.consume && appliedNonConsuming) continue;
        f.re.lastIndex = 0;
        var m = f.re.exec(rest);
        if (!m) continue;
        if (f.consume && m[0].length === 0) continue;
        if (f.consume) pos += m[0].length;
        else appliedNonConsuming = true;
        any = true;
        break;
      }
      if (!any) break;
    }
    return line.slice(pos);
  }

  function round6(x) {
    return Math.round(x * 1e6) / 1e6;
  }

  // site::KeywordIndex::search.
  function bm25(db, query) {
    var terms = [];
    tokenize(query).forEach(function (t) {
      if (terms.indexOf(t) < 0) terms.push(t);
    });
    var ix = db.index.bm25;
    var n = ix.n;
    var slot = new Map();
    var hits = [];
    terms.forEach(function (term) {
      if (!Object.prototype.hasOwnProperty.call(ix.post, term)) return;
      var list = ix.post[term];
      var df = list.length / 2;
      var idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
      for (var i = 0; i < list.length; i += 2) {
        var doc = list[i];
        var f = list[i + 1];
        var s = idf * f * (ix.k1 + 1) / (f + ix.k1 * (1 - ix.b + ix.b * ix.len[doc] / db.avgdl));
        var h = slot.get(doc);
        if (h === undefined) {
          h = { entry: doc, score: 0, contrib: [] };
          slot.set(doc, h);
          hits.push(h);
        }
        h.score += s;
        h.contrib.push([s, term]);
      }
    });
    hits.forEach(function (h) {
      h.score = round6(h.score * (ix.boost ? ix.boost[h.entry] : 1));
      // Stable sort (ES2019): equal contributions keep query order, as std::stable_sort.
      h.contrib.sort(function (a, b) { return b[0] - a[0]; });
      h.terms = h.contrib.map(function (c) { return c[1]; });
    });
    var entries = db.index.entries;
    hits.sort(function (a, b) {
      if (a.score !== b.score) return b.score - a.score;
      var x = entries[a.entry][0], y = entries[b.entry][0];
      return x < y ? -1 : x > y ? 1 : 0;
    });
    return hits;
  }

  // The ranked results for a pasted text: [{entry, id, title, category, href, kind, why}].
  function search(db, text) {
    var entries = db.index.entries;
    var results = [];
    var seen = new Set();
    var also = [];
    var messages = [];
    var lines = text.split('\n');
    for (var li = 0; li < lines.length; li++) {
      var msg = peel(db, cleanLine(lines[li]));
      if (!msg.trim()) continue;
      messages.push(msg);
      var best = null;
      var matched = [];
      for (var k = 0; k < db.patterns.length; k++) {
        var p = db.patterns[k];
        var m = p.re.exec(msg);
        if (!m) continue;
        matched.push(p.entry);
        var len = byteLength(m[0]);
        var id = entries[p.entry][0];
        if (best === null || p.priority > best.priority ||
            (p.priority === best.priority && (len > best.len || (len === best.len && id < best.id)))) {
          best = { entry: p.entry, id: id, pattern: p.id, priority: p.priority, len: len, at: m.index, mlen: m[0].length };
        }
      }
      if (best === null) continue;
      if (!seen.has(best.entry)) {
        seen.add(best.entry);
        results.push({ entry: best.entry, kind: 'pattern', why: 'pattern ' + best.pattern + ' matches line ' + (li + 1),
          snip: { text: msg, at: best.at, len: best.mlen } });
      }
      matched.forEach(function (e) {
        if (e !== best.entry) also.push({ entry: e, line: li + 1, text: msg });
      });
    }
    also.forEach(function (a) {
      if (seen.has(a.entry)) return;
      seen.add(a.entry);
      results.push({ entry: a.entry, kind: 'pattern', why: 'also matches line ' + a.line + ' (a more specific entry wins it)',
        snip: { text: a.text, at: -1, len: 0 } });
    });
    bm25(db, messages.join('\n')).forEach(function (h) {
      if (seen.has(h.entry)) return;
      seen.add(h.entry);
      results.push({ entry: h.entry, kind: 'keywords', score: h.score, terms: h.terms,
        why: 'keywords: ' + h.terms.slice(0, 5).join(', ') });
    });
    return results.map(function (r) {
      var e = entries[r.entry];
      r.id = e[0];
      r.title = e[1];
      r.category = e[2];
      r.href = e[3];
      return r;
    });
  }

  // How many results are good matches (see the top of this file; commands.search.cc
  // relevant_count): every pattern match, then the keyword hits down to cut x the best.
  function relevant(db, results) {
    var n = 0;
    var floor = null;
    for (var i = 0; i < results.length; i++) {
      var r = results[i];
      if (r.kind === 'pattern') { n++; continue; }
      if (floor === null) floor = round6(r.score * (db.index.bm25.cut || 0));
      if (r.score >= floor) n++;
      else break;
    }
    return n;
  }

  // A keyword hit's snippet: the sentence of the entry's quick answer holding most of the
  // query's words (the first one when none does), cut to about 160 characters around them.
  function keywordSnippet(summary, terms) {
    var want = new Set(terms || []);
    var sentences = (summary || '').split(/(?<=[.!?])\s+/);
    var best = sentences[0] || '';
    var bestScore = -1;
    sentences.forEach(function (s) {
      var got = new Set(tokenize(s).filter(function (t) { return want.has(t); })).size;
      if (got > bestScore) { best = s; bestScore = got; }
    });
    if (best.length > 180) {
      var lower = best.toLowerCase();
      var at = -1;
      want.forEach(function (t) { var i = lower.indexOf(t); if (i >= 0 && (at < 0 || i < at)) at = i; });
      var start = Math.max(0, Math.min(at - 40, best.length - 170));
      best = (start > 0 ? '\u2026' : '') + best.slice(start, start + 170) + '\u2026';
    }
    return best;
  }

  // ---------------------------------------------------------------------------
  // The page.

  var db = null;
  function ensure() {
    if (db === null && window.FF_INDEX) db = compile(window.FF_INDEX);
    return db;
  }

  var api = {
    tokenize: tokenize,
    cleanLine: cleanLine,
    peel: function (line) { return ensure() ? peel(db, line) : line; },
    search: function (text) { return ensure() ? search(db, text) : []; },
    relevant: function (results) { return ensure() ? relevant(db, results) : 0; },
    badPatterns: function () { return ensure() ? db.bad.slice() : ['index not loaded']; },
  };
  window.ffSearch = api;

  var LIMIT = 12;

  function el(tag, cls, text) {
    var n = document.createElement(tag);
    if (cls) n.className = cls;
    if (text !== undefined) n.textContent = text;
    return n;
  }

  function setup() {
    var box = document.getElementById('q');
    var list = document.getElementById('results');
    var status = document.getElementById('search-status');
    if (!box || !list) return;
    var root = document.body.getAttribute('data-root') || '';
    var timer = null;

    var showAll = false;

    // Text with the query's words (or a pattern's match) marked, built as text nodes.
    function marked(parent, text, isWord) {
      var re = /[A-Za-z0-9]+/g;
      var last = 0;
      var m;
      while ((m = re.exec(text)) !== null) {
        if (!isWord(m[0])) continue;
        parent.appendChild(document.createTextNode(text.slice(last, m.index)));
        parent.appendChild(el('mark', '', m[0]));
        last = m.index + m[0].length;
      }
      parent.appendChild(document.createTextNode(text.slice(last)));
    }

    function snippet(r) {
      var p = el('span', 'r-snip');
      if (r.snip) {
        var t = r.snip.text;
        if (r.snip.at >= 0) {
          var from = Math.max(0, r.snip.at - 50);
          var to = Math.min(t.length, r.snip.at + r.snip.len + 50);
          p.appendChild(document.createTextNode((from > 0 ? '\u2026' : '') + t.slice(from, r.snip.at)));
          p.appendChild(el('mark', '', t.slice(r.snip.at, r.snip.at + r.snip.len)));
          p.appendChild(document.createTextNode(t.slice(r.snip.at + r.snip.len, to) + (to < t.length ? '\u2026' : '')));
        } else {
          p.textContent = t.length > 160 ? t.slice(0, 160) + '\u2026' : t;
        }
        p.classList.add('r-line');
      } else {
        var want = new Set(r.terms || []);
        marked(p, keywordSnippet(db.index.entries[r.entry][4], r.terms), function (w) {
          var t = tokenize(w);
          return t.length > 0 && want.has(t[0]);
        });
        // Words found elsewhere in the entry (its title, tags, symptoms, examples, synonyms).
        if (!p.querySelector('mark') && r.terms && r.terms.length) {
          p.appendChild(document.createTextNode(' \u2014 matched '));
          r.terms.slice(0, 5).forEach(function (t, i) {
            if (i) p.appendChild(document.createTextNode(', '));
            p.appendChild(el('mark', '', t));
          });
        }
      }
      return p;
    }

    function render() {
      var text = box.value;
      list.textContent = '';
      if (!text.trim()) {
        list.hidden = true;
        if (status) status.textContent = '';
        return;
      }
      if (!ensure()) {
        if (status) status.textContent = 'The search index (assets/search-index.js) did not load.';
        return;
      }
      var res = search(db, text);
      var good = relevant(db, res);
      var shown = showAll ? Math.min(res.length, 50) : Math.min(good, LIMIT);
      if (status) {
        status.textContent = res.length === 0 ? 'Nothing matched. Try fewer or other words.'
          : good + (good === 1 ? ' good match' : ' good matches') +
            (good > shown ? ' (best ' + shown + ' shown)' : '') +
            (res.length > good ? '; ' + (res.length - good) + ' weaker ' + (res.length - good === 1 ? 'one' : 'ones') +
              (showAll ? ' below' : ' not shown') : '') + '.';
      }
      res.slice(0, shown).forEach(function (r, i) {
        var li = el('li', 'result ' + (r.kind === 'pattern' ? 'by-pattern' : 'by-keywords') + (i >= good ? ' weak' : ''));
        var a = el('a', 'r-link');
        a.href = root + r.href;
        a.appendChild(el('span', 'r-title', r.title));
        a.appendChild(el('span', 'r-id', r.id));
        a.appendChild(snippet(r));
        li.appendChild(a);
        var meta = el('span', 'r-why');
        meta.appendChild(el('span', 'chip small cat-' + r.category, r.category));
        meta.appendChild(document.createTextNode(' ' + r.why));
        li.appendChild(meta);
        list.appendChild(li);
      });
      if (res.length > shown && !showAll) {
        var more = el('li', 'result more');
        var btn = el('button', 'more-btn', 'Show ' + Math.min(res.length, 50) + ' of all ' + res.length);
        btn.type = 'button';
        btn.addEventListener('click', function (ev) { ev.stopPropagation(); showAll = true; render(); });
        more.appendChild(btn);
        list.appendChild(more);
      }
      list.hidden = res.length === 0;
    }

    function schedule() {
      clearTimeout(timer);
      timer = setTimeout(render, 60);
    }

    function autosize() {
      box.style.height = 'auto';
      box.style.height = Math.min(box.scrollHeight + 2, 260) + 'px';
    }

    box.addEventListener('input', function () { showAll = false; autosize(); schedule(); });
    box.addEventListener('keydown', function (ev) {
      if (ev.key === 'Enter' && !ev.shiftKey) {
        ev.preventDefault();
        clearTimeout(timer);
        render();
        var first = list.querySelector('a');
        if (first) window.location.href = first.href;
      } else if (ev.key === 'Escape') {
        box.value = '';
        render();
      } else if (ev.key === 'ArrowDown' && !list.hidden && box.selectionStart === box.value.length) {
        var a = list.querySelector('a');
        if (a) { ev.preventDefault(); a.focus(); }
      }
    });
    list.addEventListener('keydown', function (ev) {
      var links = Array.prototype.slice.call(list.querySelectorAll('a'));
      var i = links.indexOf(document.activeElement);
      if (i < 0) return;
      if (ev.key === 'ArrowDown' && i + 1 < links.length) { ev.preventDefault(); links[i + 1].focus(); }
      if (ev.key === 'ArrowUp') { ev.preventDefault(); (i > 0 ? links[i - 1] : box).focus(); }
      if (ev.key === 'Escape') { box.focus(); }
    });
    document.addEventListener('keydown', function (ev) {
      if (ev.key === '/' && document.activeElement !== box && !/^(INPUT|TEXTAREA)$/.test(document.activeElement.tagName)) {
        ev.preventDefault();
        box.focus();
      }
    });

    // The header's drop-down closes on a click elsewhere and reopens on focus.
    document.addEventListener('click', function (ev) {
      if (box.closest('.top') && !ev.target.closest('.search')) list.hidden = true;
    });
    box.addEventListener('focus', function () {
      if (box.value.trim() && list.hidden) render();
    });

    var q = new URLSearchParams(window.location.search).get('q');
    if (q) {
      box.value = q;
      autosize();
      render();
    }
  }

  // Copy buttons on the code blocks of an entry page: the code goes to the clipboard where
  // the browser allows it (file:// may not), and is selected either way for Ctrl+C.
  function setupCopy() {
    Array.prototype.forEach.call(document.querySelectorAll('.codebox'), function (box) {
      var btn = box.querySelector('button.copy');
      var code = box.querySelector('pre code');
      if (!btn || !code) return;
      btn.hidden = false;
      btn.addEventListener('click', function () {
        var range = document.createRange();
        range.selectNodeContents(code);
        var sel = window.getSelection();
        sel.removeAllRanges();
        sel.addRange(range);
        function done(label) {
          btn.textContent = label;
          setTimeout(function () { btn.textContent = 'Copy'; }, 1500);
        }
        if (navigator.clipboard && navigator.clipboard.writeText) {
          navigator.clipboard.writeText(code.textContent).then(function () { done('Copied'); }, function () { done('Selected'); });
        } else {
          done('Selected');
        }
      });
    });
  }

  // The header's menu button (shown at a phone's width, where the navigation folds away).
  function setupMenu() {
    var btn = document.getElementById('top-nav') && document.querySelectorAll('.menu-btn')[0];
    var top = document.querySelectorAll('.top')[0];
    if (!btn || !top) return;
    function set(open) {
      btn.setAttribute('aria-expanded', open ? 'true' : 'false');
      top.classList.toggle('nav-open', open);
    }
    btn.addEventListener('click', function () { set(btn.getAttribute('aria-expanded') !== 'true'); });
    Array.prototype.forEach.call(document.querySelectorAll('#top-nav a'), function (a) {
      a.addEventListener('click', function () { set(false); });
    });
    document.addEventListener('keydown', function (ev) { if (ev.key === 'Escape') set(false); });
  }

  function start() {
    setup();
    setupCopy();
    setupMenu();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
