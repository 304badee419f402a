package marks

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Mark is one named coverage point.
type Mark struct {
	name, what string
	n          atomic.Uint64
}

var (
	enabled  atomic.Bool
	mu       sync.Mutex
	registry = map[string]*Mark{}
)

// New declares a mark. name is "package/what-happened" (lower case,
// unique: a second New of a name panics, at package initialization); what
// says in a few words when it is hit.
func New(name, what string) *Mark {
	if !validName(name) {
		panic(fmt.Sprintf("marks: bad mark name %q: want package/words-with-dashes", name))
	}
	mu.Lock()
	defer mu.Unlock()
	if _, dup := registry[name]; dup {
		panic("marks: mark " + name + " declared twice")
	}
	m := &Mark{name: name, what: what}
	registry[name] = m
	return m
}

func validName(name string) bool {
	pkg, rest, ok := strings.Cut(name, "/")
	if !ok || pkg == "" || rest == "" {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '/') {
			return false
		}
	}
	return true
}

// Hit counts one passage, if counting is on.
func (m *Mark) Hit() {
	if enabled.Load() {
		m.n.Add(1)
	}
}

// Name is the mark's name; What says when it is hit.
func (m *Mark) Name() string { return m.name }
func (m *Mark) What() string { return m.what }

// Count is how often the mark was hit since counting began (or Reset).
func (m *Mark) Count() uint64 { return m.n.Load() }

// Enable turns counting on or off (off by default).
func Enable(on bool) { enabled.Store(on) }

// Enabled reports whether counting is on.
func Enabled() bool { return enabled.Load() }

// Reset sets every count to zero.
func Reset() {
	for _, m := range All() {
		m.n.Store(0)
	}
}

// All returns every declared mark, by name.
func All() []*Mark {
	mu.Lock()
	out := make([]*Mark, 0, len(registry))
	for _, m := range registry {
		out = append(out, m)
	}
	mu.Unlock()
	slices.SortFunc(out, func(a, b *Mark) int { return strings.Compare(a.name, b.name) })
	return out
}

// Snapshot returns every mark's count, by name.
func Snapshot() map[string]uint64 {
	out := map[string]uint64{}
	for _, m := range All() {
		out[m.name] = m.Count()
	}
	return out
}
