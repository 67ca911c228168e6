// Package corpus generates the lesson model's training text,
// deterministically from a seed, in seven families chosen so the model
// learns mechanisms a lesson can show rather than sentences it can recall:
// stories from a small grammar whose characters have names invented from
// syllables (so a later mention can only be predicted by copying from
// context; a few fixed names recur as a control), facts about the 193 UN
// member states in many phrasings (some held out entirely), chat turns in
// the template of package engine/chat, calculator tool calls, sums worked
// digit by digit before the answer (reasoning), JavaScript-like code, and
// small arithmetic. The held-out split shares no document with training
// (checked by hash), and draws names from other syllables, the held-out
// phrasings, and held-out sums.
package corpus
