package main

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// quoteName renders a file name for a listing as GNU ls does on a terminal
// (--quoting-style=shell-escape): plain names as they are; names with
// characters a shell treats specially in single quotes ('a b'), or in
// double quotes when the only such character is a single quote ("it's");
// and names with control characters, invalid UTF-8 or other unprintable
// runes as quoted runs joined with $'\n', $'\033' escapes. The result is
// one line with no control characters, so a name can neither show as two
// entries nor drive the terminal, and it pastes back into a shell as the
// same name.
func quoteName(name string) string {
	if name == "" {
		return "''"
	}
	plain, onlyQuote, printable := true, true, true
	for i, r := range name {
		switch {
		case r == utf8.RuneError && !validAt(name, i):
			printable = false
		case !unicode.IsPrint(r) && r != ' ':
			printable = false
		case r == '\'':
			plain = false
		case needsQuote(r, i == 0, len(name) == 1):
			plain, onlyQuote = false, false
		}
	}
	switch {
	case !printable:
		return escapeName(name)
	case plain:
		return name
	case onlyQuote:
		return `"` + name + `"`
	}
	return "'" + strings.ReplaceAll(name, "'", `'\''`) + "'"
}

// validAt reports whether the rune at byte i of s is a real U+FFFD rather
// than a decoding error.
func validAt(s string, i int) bool {
	_, size := utf8.DecodeRuneInString(s[i:])
	return size == 3
}

// needsQuote reports whether a shell would read r as more than itself
// (GNU's list); a few characters only at the start of a name, braces only
// alone.
func needsQuote(r rune, first, alone bool) bool {
	switch r {
	case '#', '~':
		return first
	case '{', '}':
		return alone
	}
	return strings.ContainsRune(" \t\n!\"$&()*;<=>?[\\]^`|", r)
}

// escapeName is the form for names with unprintable content: printable
// runs in single quotes, everything else in $'...' escapes.
func escapeName(name string) string {
	const (
		bare = iota
		quoted
		escaped
	)
	var b strings.Builder
	mode := bare
	enter := func(m int) {
		if m == mode {
			return
		}
		if mode != bare {
			b.WriteByte('\'')
		}
		switch m {
		case quoted:
			b.WriteByte('\'')
		case escaped:
			b.WriteString("$'")
		}
		mode = m
	}
	for i := 0; i < len(name); {
		r, size := utf8.DecodeRuneInString(name[i:])
		switch {
		case (r == utf8.RuneError && size < 3) || (!unicode.IsPrint(r) && r != ' '):
			enter(escaped)
			for _, c := range []byte(name[i : i+size]) {
				b.WriteString(escapeByte(c))
			}
		case r == '\'':
			enter(bare)
			b.WriteString(`\'`)
		default:
			enter(quoted)
			b.WriteString(name[i : i+size])
		}
		i += size
	}
	enter(bare)
	return b.String()
}

func escapeByte(c byte) string {
	switch c {
	case '\a':
		return `\a`
	case '\b':
		return `\b`
	case '\f':
		return `\f`
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	case '\v':
		return `\v`
	}
	return fmt.Sprintf(`\%03o`, c)
}
