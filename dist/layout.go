package dist

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/pario/pario/units"
)

// Names of the built-in distributions.
const (
	SimpleStripe = "simple_stripe"
	Basic        = "basic"
	Varstrip     = "varstrip"
	TwodStripe   = "twod_stripe"
)

// DefaultStripSize is simple_stripe's (and twod_stripe's) default strip: 64 KiB.
const DefaultStripSize = 65536

// twod_stripe's other defaults, as in OrangeFS.
const (
	DefaultNumGroups        = 2
	DefaultGroupStripFactor = 256
)

// Layout is what the metadata server records for a file, or for a directory
// as the default its new files inherit: a distribution name, its canonical
// parameters, and how many datafiles to use (0 means "all servers", or for
// varstrip, what its strips name).
//
// Its text form, used on the command line, in xattrs and on the wire, is
//
//	name[:key=value[,key=value...]]
//
// e.g. "simple_stripe:strip_size=1048576", "basic",
// "varstrip:strips=0:200000;1:4000000", "twod_stripe:num_groups=2,strip_size=65536,group_strip_factor=256",
// with the extra key num_datafiles=N accepted on any distribution.
//
// Parameters, all optional except varstrip's strips:
//
//	simple_stripe  strip_size (default 65536)
//	twod_stripe    num_groups (2), strip_size (65536), group_strip_factor (256)
//	varstrip       strips: "d0:s0;d1:s1;...", datafile:bytes pairs in logical order
//	basic          none
//
// strip_size accepts the binary suffixes of units.ParseSize (1m, 64KiB); varstrip sizes,
// num_groups, group_strip_factor and num_datafiles are plain decimal.
// strip_size is at most MaxStripSize and one full stripe at most
// MaxStripeWidth bytes.
type Layout struct {
	Dist      string // distribution name; "" means unset (inherit)
	Params    string // canonical parameter string of the distribution
	Datafiles int    // number of datafiles, 0 = decided at create
	// Servers, if set, pins datafile d to the d-th server of this list
	// ("2;5;7", placement.go); it is a create-time choice, recorded in the
	// file's server list, not in its stored layout.
	Servers string
}

// DefaultLayout is the layout used when neither hints, the directory nor the
// server configuration choose one: simple_stripe with 64 KiB strips on all
// servers.
func DefaultLayout() Layout {
	return Layout{Dist: SimpleStripe, Params: "strip_size=" + strconv.Itoa(DefaultStripSize)}
}

// IsZero reports whether the layout is unset.
func (l Layout) IsZero() bool { return l.Dist == "" }

// String renders the text form; it is canonical when Params is, as
// ParseLayout and ParseHints make it. The zero Layout renders as "".
func (l Layout) String() string {
	var b strings.Builder
	b.WriteString(l.Dist)
	sep := byte(':')
	if l.Params != "" {
		b.WriteByte(sep)
		b.WriteString(l.Params)
		sep = ','
	}
	if l.Datafiles != 0 {
		b.WriteByte(sep)
		b.WriteString("num_datafiles=")
		b.WriteString(strconv.Itoa(l.Datafiles))
		sep = ','
	}
	if l.Servers != "" {
		b.WriteByte(sep)
		b.WriteString(hintServers + "=" + l.Servers)
	}
	return b.String()
}

// ParseLayout parses the text form, filling in defaults and putting the
// parameters in canonical order. It checks everything that does not depend
// on the number of servers (Build checks the rest). Errors name the
// offending part.
func ParseLayout(s string) (Layout, error) {
	if s == "" {
		return Layout{}, errorf("dist: empty layout")
	}
	name, rest, hasParams := strings.Cut(s, ":")
	if err := checkName(name); err != nil {
		return Layout{}, err
	}
	var pairs []kv
	if hasParams {
		if rest == "" {
			return Layout{}, errorf("%s: empty parameter list after ':'", name)
		}
		var err error
		if pairs, err = splitParams(name, rest); err != nil {
			return Layout{}, err
		}
	}
	return layoutFromPairs(name, pairs)
}

// Build instantiates the distribution for a file placed on `servers`
// datafiles-worth of servers: Datafiles (if non-zero) must not exceed
// servers; 0 means all servers (simple_stripe, twod_stripe), 1 (basic), or
// what the strips name (varstrip). The result's Datafiles() is the number of
// datafiles the file gets. Params need not be canonical; they are checked
// again, since a Layout may come from an xattr or the wire.
func (l Layout) Build(servers int) (Distribution, error) {
	if l.IsZero() {
		return nil, errorf("dist: layout is unset")
	}
	if err := checkName(l.Dist); err != nil {
		return nil, err
	}
	if servers < 1 {
		return nil, errorf("%s: need at least one server, got %d", l.Dist, servers)
	}
	if l.Datafiles < 0 {
		return nil, errorf("%s: num_datafiles must be positive, got %d", l.Dist, l.Datafiles)
	}
	if l.Datafiles > servers {
		return nil, errorf("%s: num_datafiles=%d but only %d servers available", l.Dist, l.Datafiles, servers)
	}
	c, err := parseConfig(l.Dist, l.Params)
	if err != nil {
		return nil, err
	}
	n := l.Datafiles
	if n == 0 {
		n = servers
	}
	if err := c.checkDatafiles(n, l.Datafiles != 0); err != nil {
		return nil, err
	}
	d := c.build(n)
	if err := checkPlacement(l, d.Datafiles(), servers); err != nil {
		return nil, err
	}
	return d, nil
}

// New builds a distribution by name from its parameter string
// ("key=value[,key=value...]", any order, defaults filled in, "" for all
// defaults) for n datafiles. For basic, n only has to be positive: it always
// has one datafile. For varstrip, n is the number of servers available: the
// strips must fit in it, and they alone decide the datafile count.
func New(name, params string, n int) (Distribution, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, errorf("%s: need at least one datafile, got %d", name, n)
	}
	c, err := parseConfig(name, params)
	if err != nil {
		return nil, err
	}
	if err := c.checkDatafiles(n, false); err != nil {
		return nil, err
	}
	return c.build(n), nil
}

// Hint keys ParseHints knows.
const (
	hintDist         = "dist"
	hintStripSize    = "strip_size"
	hintStrips       = "strips"
	hintNumDatafiles = "num_datafiles"
	hintLayout       = "layout"
	hintVarstrip     = "varstrip_dist:string:strips"
)

// ParseHints turns create-time hints (MPI-IO info style key/value pairs) into a
// layout. Recognised keys: "dist", "strip_size", "strips", "num_datafiles",
// "layout" (a whole layout string), and the thesis' "varstrip_dist:string:strips"
// (which implies dist=varstrip). Unknown keys are an error. An empty map gives
// the zero Layout.
//
// Without "dist", strip_size implies simple_stripe, strips implies varstrip,
// and num_datafiles alone means simple_stripe with default strips. "layout"
// cannot be combined with dist, strip_size or strips; num_datafiles may add
// to it but not contradict it.
func ParseHints(h map[string]string) (Layout, error) {
	if len(h) == 0 {
		return Layout{}, nil
	}
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		switch k {
		case hintDist, hintStripSize, hintStrips, hintNumDatafiles, hintLayout, hintVarstrip:
		default:
			return Layout{}, errorf("dist: unknown hint %q (known: %s, %s, %s, %s, %s, %s)",
				k, hintDist, hintStripSize, hintStrips, hintNumDatafiles, hintLayout, hintVarstrip)
		}
		if h[k] == "" {
			return Layout{}, errorf("dist: hint %q has an empty value", k)
		}
	}

	if text, ok := h[hintLayout]; ok {
		for _, k := range []string{hintDist, hintStripSize, hintStrips, hintVarstrip} {
			if _, ok := h[k]; ok {
				return Layout{}, errorf("dist: hint %q cannot be combined with hint %q", hintLayout, k)
			}
		}
		l, err := ParseLayout(text)
		if err != nil {
			return Layout{}, err
		}
		nd, ok := h[hintNumDatafiles]
		if !ok {
			return l, nil
		}
		if l.Datafiles != 0 {
			if v, ok := parseUint(nd); !ok || v != int64(l.Datafiles) {
				return Layout{}, errorf("dist: hint num_datafiles=%s contradicts layout %q", nd, text)
			}
			return l, nil
		}
		pairs, err := splitParams(l.Dist, l.Params)
		if err != nil {
			return Layout{}, err
		}
		return layoutFromPairs(l.Dist, append(pairs, kv{hintNumDatafiles, nd}))
	}

	name := h[hintDist]
	strips, hasStrips := h[hintStrips]
	if vs, ok := h[hintVarstrip]; ok {
		if name != "" && name != Varstrip {
			return Layout{}, errorf("dist: hint %q implies dist %s, but hint dist is %q", hintVarstrip, Varstrip, name)
		}
		if hasStrips && strips != vs {
			return Layout{}, errorf("dist: hints %q and %q disagree: %q vs %q", hintStrips, hintVarstrip, strips, vs)
		}
		name, strips, hasStrips = Varstrip, vs, true
	}
	_, hasStripSize := h[hintStripSize]
	if name == "" {
		switch {
		case hasStripSize && hasStrips:
			return Layout{}, errorf("dist: hints %q and %q belong to different distributions; give %q", hintStripSize, hintStrips, hintDist)
		case hasStrips:
			name = Varstrip
		default:
			name = SimpleStripe
		}
	}
	if err := checkName(name); err != nil {
		return Layout{}, err
	}
	var pairs []kv
	if hasStripSize {
		pairs = append(pairs, kv{hintStripSize, h[hintStripSize]})
	}
	if hasStrips {
		pairs = append(pairs, kv{hintStrips, strips})
	}
	if nd, ok := h[hintNumDatafiles]; ok {
		pairs = append(pairs, kv{hintNumDatafiles, nd})
	}
	return layoutFromPairs(name, pairs)
}

// ParseHintString parses "key=value[,key=value...]" into a hint map (the
// value may contain ':' and ';' but not ','). Each pair splits at its first
// '='; spaces around keys and values are dropped. "" gives an empty map.
// Empty pairs, a missing '=', an empty key and a repeated key are errors that
// name the offending pair.
func ParseHintString(s string) (map[string]string, error) {
	h := make(map[string]string)
	if strings.TrimSpace(s) == "" {
		return h, nil
	}
	for i, pair := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(pair, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch {
		case strings.TrimSpace(pair) == "":
			return nil, errorf("dist: hint pair %d is empty in %q", i+1, s)
		case !ok:
			return nil, errorf("dist: hint pair %q has no '='", pair)
		case k == "":
			return nil, errorf("dist: hint pair %q has an empty key", pair)
		}
		if _, dup := h[k]; dup {
			return nil, errorf("dist: hint pair %q repeats key %q", pair, k)
		}
		h[k] = v
	}
	return h, nil
}

// kv is one key=value parameter.
type kv struct{ key, value string }

func checkName(name string) error {
	switch name {
	case SimpleStripe, Basic, Varstrip, TwodStripe:
		return nil
	case "":
		return errorf("dist: empty distribution name")
	}
	return errorf("dist: unknown distribution %q (known: %s, %s, %s, %s)", name, Basic, SimpleStripe, TwodStripe, Varstrip)
}

// splitParams splits "k=v,k=v" strictly: no empty pairs, no missing '=', no
// empty or repeated keys. Keys are left for the distribution to judge.
func splitParams(name, s string) ([]kv, error) {
	if s == "" {
		return nil, nil
	}
	fields := strings.Split(s, ",")
	pairs := make([]kv, 0, len(fields))
	for i, f := range fields {
		k, v, ok := strings.Cut(f, "=")
		switch {
		case f == "":
			return nil, errorf("%s: parameter %d is empty in %q", name, i+1, s)
		case !ok:
			return nil, errorf("%s: parameter %q has no '='", name, f)
		case k == "":
			return nil, errorf("%s: parameter %q has an empty key", name, f)
		}
		for _, p := range pairs {
			if p.key == k {
				return nil, errorf("%s: parameter %q given twice", name, k)
			}
		}
		pairs = append(pairs, kv{k, v})
	}
	return pairs, nil
}

// layoutFromPairs validates a distribution's parameters plus num_datafiles
// as far as possible without a server count and returns the canonical
// Layout.
func layoutFromPairs(name string, pairs []kv) (Layout, error) {
	var params []kv
	nd := 0
	pin := ""
	for _, p := range pairs {
		if p.key == hintServers {
			servers, err := ParseServers(p.value)
			if err != nil {
				return Layout{}, err
			}
			pin = FormatServers(servers)
			continue
		}
		if p.key != hintNumDatafiles {
			params = append(params, p)
			continue
		}
		if nd != 0 {
			return Layout{}, errorf("%s: parameter %q given twice", name, p.key)
		}
		v, ok := parseUint(p.value)
		switch {
		case !ok:
			return Layout{}, errorf("%s: num_datafiles %q is not a decimal number", name, p.value)
		case v == 0:
			return Layout{}, errorf("%s: num_datafiles must be positive, got 0", name)
		case v > math.MaxInt32:
			return Layout{}, errorf("%s: num_datafiles %d is too large", name, v)
		}
		nd = int(v)
	}
	c, err := configFromPairs(name, params, hintNumDatafiles)
	if err != nil {
		return Layout{}, err
	}
	if pin != "" {
		// servers= names the datafiles: it sets their count.
		np := strings.Count(pin, ";") + 1
		if nd != 0 && nd != np {
			return Layout{}, errorf("%s: num_datafiles=%d but %s= names %d servers", name, nd, hintServers, np)
		}
		nd = np
	}
	if nd != 0 {
		if err := c.checkDatafiles(nd, true); err != nil {
			return Layout{}, err
		}
	}
	return Layout{Dist: name, Params: c.params(), Datafiles: nd, Servers: pin}, nil
}

// config is a distribution's validated parameters, before a datafile count
// is known.
type config struct {
	name   string
	strip  int64    // simple_stripe, twod_stripe
	groups int64    // twod_stripe
	factor int64    // twod_stripe
	strips []vstrip // varstrip
}

func parseConfig(name, params string) (*config, error) {
	pairs, err := splitParams(name, params)
	if err != nil {
		return nil, err
	}
	return configFromPairs(name, pairs)
}

// configFromPairs validates a distribution's own parameters; extra are the
// keys the caller takes besides them (num_datafiles in a layout), named
// with the known keys when one is not.
func configFromPairs(name string, pairs []kv, extra ...string) (*config, error) {
	c := &config{name: name, strip: DefaultStripSize, groups: DefaultNumGroups, factor: DefaultGroupStripFactor}
	var known []string
	switch name {
	case SimpleStripe:
		known = []string{"strip_size"}
	case TwodStripe:
		known = []string{"num_groups", "strip_size", "group_strip_factor"}
	case Varstrip:
		known = []string{"strips"}
	}
	hasStrips := false
	for _, p := range pairs {
		if !slices.Contains(known, p.key) {
			if len(known) == 0 {
				return nil, errorf("%s: takes no parameters, got %q", name, p.key)
			}
			return nil, errorf("%s: unknown parameter %q (known: %s)", name, p.key, strings.Join(append(known, extra...), ", "))
		}
		var err error
		switch p.key {
		case "strip_size":
			c.strip, err = parseStripSize(name, p.value)
		case "num_groups":
			c.groups, err = parseCount(name, p.key, p.value)
		case "group_strip_factor":
			c.factor, err = parseCount(name, p.key, p.value)
		case "strips":
			c.strips, err = parseStrips(p.value)
			hasStrips = true
		}
		if err != nil {
			return nil, err
		}
	}
	switch name {
	case Varstrip:
		if !hasStrips {
			return nil, errorf("%s: parameter strips is required", name)
		}
	case TwodStripe:
		if c.strip > MaxStripeWidth/c.factor {
			return nil, errorf("%s: strip_size %d * group_strip_factor %d exceeds %d bytes", name, c.strip, c.factor, int64(MaxStripeWidth))
		}
	}
	return c, nil
}

func parseStripSize(name, s string) (int64, error) {
	v, err := units.ParseSize(s)
	var ue *units.Error
	switch {
	case errors.Is(err, units.ErrNotPositive):
		return 0, errorf("%s: strip_size must be positive, got %s", name, s)
	case errors.As(err, &ue):
		return 0, errorf("%s: strip_size %q: %s", name, s, ue.Reason)
	case err != nil:
		return 0, errorf("%s: strip_size %q: %v", name, s, err)
	}
	if v > MaxStripSize {
		return 0, errorf("%s: strip_size %d exceeds the limit %d", name, v, int64(MaxStripSize))
	}
	return v, nil
}

func parseCount(name, key, s string) (int64, error) {
	if s != "" && s[0] == '-' {
		if _, ok := parseUint(s[1:]); ok {
			return 0, errorf("%s: %s must be positive, got %s", name, key, s)
		}
	}
	v, ok := parseUint(s)
	switch {
	case !ok:
		return 0, errorf("%s: %s %q is not a decimal number", name, key, s)
	case v == 0:
		return 0, errorf("%s: %s must be positive, got 0", name, key)
	case v > maxCount:
		return 0, errorf("%s: %s %d exceeds the limit %d", name, key, v, int64(maxCount))
	}
	return v, nil
}

func (c *config) params() string {
	switch c.name {
	case SimpleStripe:
		return (&simpleStripe{strip: c.strip}).Params()
	case TwodStripe:
		return (&twodStripe{groups: c.groups, strip: c.strip, factor: c.factor}).Params()
	case Varstrip:
		return "strips=" + formatStrips(c.strips)
	}
	return ""
}

// checkDatafiles checks that the distribution can use n datafiles. For
// basic and varstrip, which decide their own count, exact says whether n was
// asked for explicitly (and must then match) or is only the number of
// servers available.
func (c *config) checkDatafiles(n int, exact bool) error {
	switch c.name {
	case Basic:
		if exact && n != 1 {
			return errorf("%s: keeps everything on one datafile, num_datafiles=%d given", c.name, n)
		}
	case Varstrip:
		if err := checkStripsFit(c.strips, n); err != nil {
			return err
		}
		if want := stripsDatafiles(c.strips); exact && n != want {
			return errorf("%s: strips use %d datafiles, num_datafiles=%d given", c.name, want, n)
		}
	case SimpleStripe:
		if c.strip > MaxStripeWidth/int64(n) {
			return errorf("%s: strip_size %d on %d datafiles makes a stripe over %d bytes", c.name, c.strip, n, int64(MaxStripeWidth))
		}
	case TwodStripe:
		if c.strip*c.factor > MaxStripeWidth/int64(n) {
			return errorf("%s: strip_size %d * group_strip_factor %d on %d datafiles makes a stripe over %d bytes",
				c.name, c.strip, c.factor, n, int64(MaxStripeWidth))
		}
	}
	return nil
}

// build makes the distribution; checkDatafiles(n) must have passed.
func (c *config) build(n int) Distribution {
	switch c.name {
	case SimpleStripe:
		return &simpleStripe{strip: c.strip, n: int64(n), width: c.strip * int64(n)}
	case TwodStripe:
		return newTwod(c.groups, c.strip, c.factor, int64(n))
	case Varstrip:
		return newVarstrip(c.strips)
	}
	return basic{}
}
