package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Problem is one thing wrong with a scenario, with the line it was found on.
type Problem struct {
	Line  int
	Field string
	Msg   string
}

func (p Problem) String() string {
	if p.Line > 0 {
		return fmt.Sprintf("line %d: %s: %s", p.Line, p.Field, p.Msg)
	}
	return fmt.Sprintf("%s: %s", p.Field, p.Msg)
}

// Error lists every problem of a refused scenario.
type Error struct {
	Source   string
	Problems []Problem
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "scenario %s refused: %d problem(s)", e.Source, len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		if e.Source != "" && p.Line > 0 {
			b.WriteString(e.Source + ":")
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// Load reads, decodes and validates a scenario file.
func Load(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data, path)
}

// Parse decodes and validates a scenario; source names it in error messages.
func Parse(data []byte, source string) (*Scenario, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var s Scenario
	if err := dec.Decode(&s); err != nil {
		return nil, &Error{Source: source, Problems: yamlProblems(err)}
	}
	if problems := Validate(&s); len(problems) > 0 {
		return nil, &Error{Source: source, Problems: problems}
	}
	return &s, nil
}

// yamlProblems turns yaml.v3's errors ("line 5: field foo not found in type ...") into problems.
func yamlProblems(err error) []Problem {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		out := make([]Problem, 0, len(te.Errors))
		for _, msg := range te.Errors {
			out = append(out, problemFromYAMLMessage(msg))
		}
		return out
	}
	return []Problem{problemFromYAMLMessage(err.Error())}
}

func problemFromYAMLMessage(msg string) Problem {
	msg = strings.TrimPrefix(msg, "yaml: ")
	var line int
	if strings.HasPrefix(msg, "line ") {
		rest := msg[len("line "):]
		if i := strings.Index(rest, ":"); i > 0 {
			if n, err := strconv.Atoi(rest[:i]); err == nil {
				line = n
				msg = strings.TrimSpace(rest[i+1:])
			}
		}
	}
	field := "yaml"
	if strings.HasPrefix(msg, "field ") {
		if i := strings.Index(msg[len("field "):], " "); i > 0 {
			field = msg[len("field ") : len("field ")+i]
			msg = "unknown field"
		}
	}
	return Problem{Line: line, Field: field, Msg: msg}
}

// decodeWithPos decodes a mapping node into out (through an alias type without methods) and
// records the node's line and the line of each key.
func decodeWithPos(node *yaml.Node, out any, p *pos) error {
	if node.Kind != yaml.MappingNode {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: expected a mapping, found %s", node.Line, kindName(node))}}
	}
	p.line = node.Line
	p.lines = make(map[string]int, len(node.Content)/2)
	known := yamlFields(out)
	var unknown []string
	for i := 0; i+1 < len(node.Content); i += 2 {
		key := node.Content[i]
		p.lines[key.Value] = key.Line
		if !known[key.Value] {
			unknown = append(unknown, fmt.Sprintf("line %d: field %s not found", key.Line, key.Value))
		}
	}
	// node.Decode does not carry the decoder's KnownFields setting, so unknown keys are checked
	// here against the struct's yaml tags.
	err := node.Decode(out)
	if len(unknown) == 0 {
		return err
	}
	var te *yaml.TypeError
	if errors.As(err, &te) {
		unknown = append(unknown, te.Errors...)
	} else if err != nil {
		return err
	}
	return &yaml.TypeError{Errors: unknown}
}

// yamlFields returns the yaml key names of the struct out points to.
func yamlFields(out any) map[string]bool {
	t := reflect.TypeOf(out).Elem()
	names := make(map[string]bool, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		tag := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]
		if tag != "" && tag != "-" {
			names[tag] = true
		}
	}
	return names
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.ScalarNode:
		return fmt.Sprintf("the value %q", n.Value)
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	default:
		return "nothing"
	}
}

// Each struct decodes through an alias (same fields, no UnmarshalYAML) so KnownFields still applies.

func (s *Scenario) UnmarshalYAML(n *yaml.Node) error {
	type plain Scenario
	return decodeWithPos(n, (*plain)(s), &s.pos)
}

func (s *Settings) UnmarshalYAML(n *yaml.Node) error {
	type plain Settings
	return decodeWithPos(n, (*plain)(s), &s.pos)
}

func (c *Cluster) UnmarshalYAML(n *yaml.Node) error {
	type plain Cluster
	return decodeWithPos(n, (*plain)(c), &c.pos)
}

func (h *Host) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode { // a bare host name
		h.Name, h.pos = n.Value, pos{line: n.Line}
		return nil
	}
	type plain Host
	return decodeWithPos(n, (*plain)(h), &h.pos)
}

func (d *Datastore) UnmarshalYAML(n *yaml.Node) error {
	type plain Datastore
	return decodeWithPos(n, (*plain)(d), &d.pos)
}

func (d *Device) UnmarshalYAML(n *yaml.Node) error {
	type plain Device
	return decodeWithPos(n, (*plain)(d), &d.pos)
}

func (sp *ServiceParams) UnmarshalYAML(n *yaml.Node) error {
	type plain ServiceParams
	return decodeWithPos(n, (*plain)(sp), &sp.pos)
}

func (s *SIOC) UnmarshalYAML(n *yaml.Node) error {
	type plain SIOC
	return decodeWithPos(n, (*plain)(s), &s.pos)
}

func (v *VM) UnmarshalYAML(n *yaml.Node) error {
	type plain VM
	return decodeWithPos(n, (*plain)(v), &v.pos)
}

func (d *Disk) UnmarshalYAML(n *yaml.Node) error {
	type plain Disk
	return decodeWithPos(n, (*plain)(d), &d.pos)
}

func (a *IOAlloc) UnmarshalYAML(n *yaml.Node) error {
	type plain IOAlloc
	return decodeWithPos(n, (*plain)(a), &a.pos)
}

func (w *Workload) UnmarshalYAML(n *yaml.Node) error {
	type plain Workload
	return decodeWithPos(n, (*plain)(w), &w.pos)
}

func (p *Phase) UnmarshalYAML(n *yaml.Node) error {
	type plain Phase
	return decodeWithPos(n, (*plain)(p), &p.pos)
}

func (b *Burst) UnmarshalYAML(n *yaml.Node) error {
	type plain Burst
	return decodeWithPos(n, (*plain)(b), &b.pos)
}

func (s *ScheduleStep) UnmarshalYAML(n *yaml.Node) error {
	type plain ScheduleStep
	return decodeWithPos(n, (*plain)(s), &s.pos)
}

// UnmarshalYAML accepts `8`, `{min: 4, max: 12, every: 1m}` or `{schedule: [{at: 0s, value: 4}, ...], repeat: 1h}`.
func (o *OIO) UnmarshalYAML(n *yaml.Node) error {
	o.pos = pos{line: n.Line}
	if n.Kind == yaml.ScalarNode {
		v, err := strconv.ParseFloat(n.Value, 64)
		if err != nil {
			return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: oio must be a number, a {min, max} range or a {schedule} list, not %q", n.Line, n.Value)}}
		}
		o.Fixed = v
		return nil
	}
	var raw struct {
		Min      float64        `yaml:"min"`
		Max      float64        `yaml:"max"`
		Every    Duration       `yaml:"every"`
		Schedule []ScheduleStep `yaml:"schedule"`
		Repeat   Duration       `yaml:"repeat"`
	}
	if err := decodeWithPos(n, &raw, &o.pos); err != nil {
		return err
	}
	o.Min, o.Max, o.Every, o.Schedule, o.Repeat = raw.Min, raw.Max, raw.Every, raw.Schedule, raw.Repeat
	return nil
}

// UnmarshalYAML accepts "category/name".
func (t *Tag) UnmarshalYAML(n *yaml.Node) error {
	t.pos = pos{line: n.Line}
	cat, name, ok := strings.Cut(n.Value, "/")
	if n.Kind != yaml.ScalarNode || !ok || cat == "" || name == "" || strings.Contains(name, "/") {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: a tag is written category/name, not %q", n.Line, n.Value)}}
	}
	t.Category, t.Name = cat, name
	return nil
}

// MarshalYAML writes a tag as category/name.
func (t Tag) MarshalYAML() (any, error) { return t.Category + "/" + t.Name, nil }

// UnmarshalYAML accepts low, normal, high or a number of shares.
func (s *Shares) UnmarshalYAML(n *yaml.Node) error {
	s.pos = pos{line: n.Line}
	if n.Kind != yaml.ScalarNode {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: shares must be low, normal, high or a number", n.Line)}}
	}
	switch n.Value {
	case "low", "normal", "high":
		s.Level = n.Value
		return nil
	}
	v, err := strconv.ParseInt(n.Value, 10, 32)
	if err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: shares must be low, normal, high or a number, not %q", n.Line, n.Value)}}
	}
	s.Level, s.Value = "custom", int32(v)
	return nil
}

// UnmarshalYAML accepts a Go duration string ("90s", "10m", "1h30m") or a number of seconds.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: a duration must be like 90s, 10m, 1h or a number of seconds", n.Line)}}
	}
	if secs, err := strconv.ParseFloat(n.Value, 64); err == nil {
		d.Duration = time.Duration(secs * float64(time.Second))
		return nil
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %q is not a duration (like 90s, 10m, 1h)", n.Line, n.Value)}}
	}
	d.Duration = v
	return nil
}

// MarshalYAML writes durations as Go duration strings, so generated scenarios read back the same.
func (d Duration) MarshalYAML() (any, error) { return d.Duration.String(), nil }

// MarshalYAML writes shares as their level name, or the number for custom shares.
func (s Shares) MarshalYAML() (any, error) {
	if s.Level == "custom" {
		return s.Value, nil
	}
	if s.Level == "" {
		return "normal", nil
	}
	return s.Level, nil
}

// MarshalYAML writes the form the OIO was given in.
func (o OIO) MarshalYAML() (any, error) {
	switch o.Kind() {
	case "schedule":
		return struct {
			Schedule []ScheduleStep `yaml:"schedule"`
			Repeat   *Duration      `yaml:"repeat,omitempty"`
		}{o.Schedule, optionalDuration(o.Repeat)}, nil
	case "range":
		return struct {
			Min   float64   `yaml:"min"`
			Max   float64   `yaml:"max"`
			Every *Duration `yaml:"every,omitempty"`
		}{o.Min, o.Max, optionalDuration(o.Every)}, nil
	default:
		return o.Fixed, nil
	}
}

func optionalDuration(d Duration) *Duration {
	if d.Duration <= 0 {
		return nil
	}
	return &d
}
