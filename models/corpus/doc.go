// Package corpus generates the lesson model's training text,
// deterministically from a seed, in four families chosen for the lessons:
// facts (the capital and continent of every UN member state, in several
// phrasings), short stories whose character names recur (copying from
// context), JavaScript-like code that defines and then uses variables, and
// small arithmetic. A held-out split uses other seeds and unseen name
// combinations.
package corpus
