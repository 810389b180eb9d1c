package physics

import "math"

// Random numbers are derived by hashing (seed, what, where, when) instead of drawing from a shared
// generator, so a result does not depend on the order in which disks or datastores are solved and
// Step is deterministic for a seed even when datastores are solved in parallel.

// Salts keep the streams for different purposes apart.
const (
	saltRange uint64 = iota + 1
	saltNoise
)

// splitmix64 is a strong 64-bit mixing function (Steele, Lea and Flood, 2014).
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func mix(vals ...uint64) uint64 {
	h := uint64(0x6a09e667f3bcc909)
	for _, v := range vals {
		h = splitmix64(h ^ v)
	}
	return h
}

// hashString is FNV-1a.
func hashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// uniform maps a hash to [0, 1).
func uniform(h uint64) float64 { return float64(h>>11) / (1 << 53) }

// normal maps a hash to a standard normal deviate (Box-Muller).
func normal(h uint64) float64 {
	u1 := uniform(h)
	u2 := uniform(splitmix64(h))
	if u1 < 1e-300 {
		u1 = 1e-300
	}
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
}

// noisy returns v times a log-normal factor of relative standard deviation sigma and mean one, so
// measured counters scatter around the truth by a few per cent and never turn negative.
func noisy(v, sigma float64, h uint64) float64 {
	if sigma <= 0 || v == 0 {
		return v
	}
	return v * math.Exp(sigma*normal(h)-sigma*sigma/2)
}
