package units

import "strings"

// SizeValue is a command-line flag holding a byte count read by
// ParseSize. It satisfies flag.Value and pflag.Value:
//
//	chunk := int64(8 << 20)
//	f.Var(units.SizeFlag(&chunk), "chunk", "bytes per transfer")
type SizeValue struct {
	p    *int64
	opts []Option
}

// SizeFlag binds a size flag to p; p's value is the default.
func SizeFlag(p *int64, opts ...Option) *SizeValue { return &SizeValue{p, opts} }

// Set parses s with ParseSize and the flag's options.
func (v *SizeValue) Set(s string) error {
	n, err := ParseSize(s, v.opts...)
	if err != nil {
		return err
	}
	*v.p = n
	return nil
}

// String writes the size as Set reads it (so help shows "default 64m").
func (v *SizeValue) String() string {
	if v == nil || v.p == nil {
		return ""
	}
	return FormatSize(*v.p)
}

// Type names the argument in help text.
func (v *SizeValue) Type() string { return "size" }

// Get returns the int64 held (flag.Getter).
func (v *SizeValue) Get() any { return *v.p }

// RateValue is a command-line flag holding bytes/s read by ParseRate; 0
// means unset (ParseRate never returns it).
type RateValue struct{ p *float64 }

// RateFlag binds a rate flag to p; p's value is the default.
func RateFlag(p *float64) *RateValue { return &RateValue{p} }

// Set parses s with ParseRate.
func (v *RateValue) Set(s string) error {
	r, err := ParseRate(s)
	if err != nil {
		return err
	}
	*v.p = r
	return nil
}

// String writes the rate as FormatRate does; "" when unset.
func (v *RateValue) String() string {
	if v == nil || v.p == nil || *v.p == 0 {
		return ""
	}
	return FormatRate(*v.p)
}

// Type names the argument in help text.
func (v *RateValue) Type() string { return "rate" }

// Get returns the float64 held, bytes/s (flag.Getter).
func (v *RateValue) Get() any { return *v.p }

// SizeListValue is a command-line flag holding a list of sizes, given
// comma separated or by repeating the flag. The first use replaces the
// default.
type SizeListValue struct {
	p       *[]int64
	opts    []Option
	changed bool
}

// SizeListFlag binds a size list flag to p; p's value is the default.
func SizeListFlag(p *[]int64, opts ...Option) *SizeListValue {
	return &SizeListValue{p: p, opts: opts}
}

// Set parses each comma-separated element of s with ParseSize.
func (v *SizeListValue) Set(s string) error {
	var out []int64
	for e := range strings.SplitSeq(s, ",") {
		n, err := ParseSize(strings.TrimSpace(e), v.opts...)
		if err != nil {
			return err
		}
		out = append(out, n)
	}
	if !v.changed {
		*v.p = nil
		v.changed = true
	}
	*v.p = append(*v.p, out...)
	return nil
}

// String writes the list as pflag writes its slices: "[64k,1m]".
func (v *SizeListValue) String() string {
	if v == nil || v.p == nil {
		return "[]"
	}
	parts := make([]string, len(*v.p))
	for i, n := range *v.p {
		parts[i] = FormatSize(n)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// Type names the argument in help text.
func (v *SizeListValue) Type() string { return "sizes" }

// Get returns the []int64 held (flag.Getter).
func (v *SizeListValue) Get() any { return *v.p }
