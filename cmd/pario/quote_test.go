package main

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestQuoteName(t *testing.T) {
	// What GNU ls --quoting-style=shell-escape prints for each name.
	for _, tc := range []struct{ name, want string }{
		{"plain.dat", "plain.dat"},
		{"a-b_c+d,e%f@g:h", "a-b_c+d,e%f@g:h"},
		{"é-ü-漢字", "é-ü-漢字"},
		{"a b", "'a b'"},
		{"it's", `"it's"`},
		{"it's a b", `'it'\''s a b'`},
		{"a$b", "'a$b'"},
		{"a=b", "'a=b'"},
		{"~x", "'~x'"},
		{"x~", "x~"},
		{"#x", "'#x'"},
		{"x#", "x#"},
		{"{", "'{'"},
		{"a{b}", "a{b}"},
		{"", "''"},
		{"a\nb", `'a'$'\n''b'`},
		{"a\n\nb", `'a'$'\n\n''b'`},
		{"\n", `$'\n'`},
		{"x\x1b[31mred", `'x'$'\033''[31mred'`},
		{"tab\there", `'tab'$'\t''here'`},
		{"bad\xffutf8", `'bad'$'\377''utf8'`},
		{"it's\n", `'it'\''s'$'\n'`},
		{"del\x7f", `'del'$'\177'`},
	} {
		if got := quoteName(tc.name); got != tc.want {
			t.Errorf("quoteName(%q) = %s, want %s", tc.name, got, tc.want)
		}
	}
}

// FuzzQuoteName: whatever the name, the quoted form is one line of
// printable UTF-8 and a shell reads it back as the same name.
func FuzzQuoteName(f *testing.F) {
	for _, s := range []string{"a", "a b", "it's", "a\nb", "\x1b]0;title\a", "\xff\xfe", "'\n'", "{", "~", "é\u202e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		q := quoteName(name)
		if !utf8.ValidString(q) {
			t.Fatalf("quoteName(%q) = %q: not UTF-8", name, q)
		}
		for _, c := range []byte(q) {
			if c < 0x20 || c == 0x7f {
				t.Fatalf("quoteName(%q) = %q holds control byte %#x", name, q, c)
			}
		}
		back, err := shellUnquote(q)
		if err != nil || back != name {
			t.Fatalf("quoteName(%q) = %s reads back as %q (%v)", name, q, back, err)
		}
	})
}

// shellUnquote reads a word as bash does, for the quoting quoteName uses:
// '...', "..." without specials inside, \x, and $'...' with C escapes.
func shellUnquote(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); {
		switch {
		case s[i] == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return "", fmt.Errorf("unclosed ' at %d", i)
			}
			b.WriteString(s[i+1 : i+1+j])
			i += j + 2
		case s[i] == '"':
			j := strings.IndexByte(s[i+1:], '"')
			if j < 0 || strings.ContainsAny(s[i+1:i+1+j], "$`\\") {
				return "", fmt.Errorf("bad \" at %d", i)
			}
			b.WriteString(s[i+1 : i+1+j])
			i += j + 2
		case s[i] == '\\' && i+1 < len(s):
			b.WriteByte(s[i+1])
			i += 2
		case strings.HasPrefix(s[i:], "$'"):
			i += 2
			for ; i < len(s) && s[i] != '\''; i++ {
				if s[i] != '\\' || i+1 >= len(s) {
					return "", fmt.Errorf("bad $' escape at %d", i)
				}
				i++
				if c, ok := map[byte]byte{'a': '\a', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v'}[s[i]]; ok {
					b.WriteByte(c)
					continue
				}
				if i+3 > len(s) {
					return "", fmt.Errorf("short octal escape at %d", i)
				}
				n, err := strconv.ParseUint(s[i:i+3], 8, 8)
				if err != nil {
					return "", err
				}
				b.WriteByte(byte(n))
				i += 2
			}
			if i >= len(s) {
				return "", fmt.Errorf("unclosed $'")
			}
			i++
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String(), nil
}
