package physics

import (
	"testing"
	"time"

	"github.com/basil-project/basil/lab/internal/scenario"
)

// BenchmarkStepLarge times one 20 s interval of the large scenario (6,000 disks, 50 datastores):
// at --speed 60 the lab must solve one every third of a second.
func BenchmarkStepLarge(b *testing.B) {
	s, err := scenario.Load("../../scenarios/large.yaml")
	if err != nil {
		b.Fatal(err)
	}
	m, err := New(s)
	if err != nil {
		b.Fatal(err)
	}
	m.SetStart(t0)
	i := 0
	for b.Loop() {
		i++
		m.Step(t0.Add(time.Duration(i)*20*time.Second), 20*time.Second)
	}
}
