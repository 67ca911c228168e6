package corpus

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

var (
	things = strings.Fields("user order item post cart city song movie book player team note task photo file")
	fields = strings.Fields("name email id title price count size date status color")
)

func code(r *rand.Rand, _ bool) Doc {
	v, f := pick(r, things), pick(r, fields)
	getter := "get" + title(v)
	var text string
	switch r.IntN(4) {
	case 0:
		text = fmt.Sprintf("const %s = %s();\nconsole.log(%s.%s);", v, getter, v, f)
	case 1:
		text = fmt.Sprintf("let %s = await %s(id);\nif (%s.%s) {\n  return %s.%s;\n}", v, getter, v, f, v, f)
	case 2:
		n := pick(r, things)
		text = fmt.Sprintf("function show(%s) {\n  const %s = %s.%s;\n  return %s;\n}", v, n, v, f, n)
	default:
		g := pick(r, fields)
		text = fmt.Sprintf("for (const %s of %ss) {\n  console.log(%s.%s, %s.%s);\n}", v, v, v, f, v, g)
	}
	return Doc{Family: Code, Text: text}
}

func arithmetic(r *rand.Rand, _ bool) Doc {
	var parts []string
	for k := 0; k < 4; k++ {
		a, b := r.IntN(21), r.IntN(21)
		if r.IntN(2) == 0 {
			parts = append(parts, fmt.Sprintf("%d + %d = %d.", a, b, a+b))
		} else {
			a, b = max(a, b), min(a, b)
			parts = append(parts, fmt.Sprintf("%d - %d = %d.", a, b, a-b))
		}
	}
	return Doc{Family: Arithmetic, Text: strings.Join(parts, " ")}
}
