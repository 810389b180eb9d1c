package main

import (
	"errors"
	"fmt"
	"math"
)

// bestAnswer is what `best` answers: the pod's best placement by total IOPS (ties: lower
// IOPS-weighted latency) among every feasible assignment of its movable disks, and the worst.
type bestAnswer struct {
	Best       placementTruth `json:"best"`
	Worst      placementTruth `json:"worst"`
	Placements int            `json:"placements"` // feasible placements compared
	Evaluated  int            `json:"evaluated"`  // distinct (datastore, disks) sets solved
}

// defaultMaxCombinations bounds the enumeration unless the request says otherwise.
const defaultMaxCombinations = 2_000_000

// subsetScore is one datastore's truth with a set of disks on it, over the window.
type subsetScore struct{ iops, latSum float64 }

// best enumerates every placement of the pod's movable disks on datastores their host mounts,
// keeping each datastore's used space at or under max(capacity × (1 − headroom), its use in the
// scenario's placement), and moving nothing onto a datastore in maintenance: what a balancer
// honouring the headroom can reach from the start.
func best(req *request) (*bestAnswer, error) {
	l, err := newLab(req)
	if err != nil {
		return nil, err
	}
	w, err := window(req)
	if err != nil {
		return nil, err
	}
	if req.HeadroomPct < 0 || req.HeadroomPct >= 100 {
		return nil, fmt.Errorf("headroom_pct: must be at least 0 and below 100, got %g", req.HeadroomPct)
	}
	limit := req.MaxCombinations
	if limit == 0 {
		limit = defaultMaxCombinations
	}
	n := len(l.movable)
	if n == 0 {
		return nil, fmt.Errorf("pod %q has no active disk to place", l.pod)
	}
	if n > 62 {
		return nil, fmt.Errorf("pod %q has %d active disks: too many for exhaustive search", l.pod, n)
	}
	// Where each disk may go, and how many placements that makes.
	options := make([][]int, n)
	combos := 1.0
	inMaintenance := map[string]bool{}
	for _, d := range l.s.Datastores {
		inMaintenance[d.Name] = d.Maintenance
	}
	for j, i := range l.movable {
		for s, ds := range l.stores {
			// A datastore in maintenance is never a target; a disk already on one may stay.
			if l.visible(l.disks[i].host, ds) && (!inMaintenance[ds] || ds == l.disks[i].home) {
				options[j] = append(options[j], s)
			}
		}
		combos *= float64(len(options[j]))
	}
	if combos > float64(limit) {
		return nil, fmt.Errorf("pod %q has %.3g placements, above max_combinations %d", l.pod, combos, limit)
	}
	fixed := l.fixedGB()
	room := make([]float64, len(l.stores))
	startUse := make([]float64, len(l.stores))
	for _, i := range l.movable {
		startUse[l.storeAt[l.disks[i].home]] += l.disks[i].sizeGB
	}
	for s, ds := range l.stores {
		capacity := 0.0
		for _, d := range l.s.Datastores {
			if d.Name == ds {
				capacity = d.CapacityGB
			}
		}
		room[s] = math.Max(capacity*(1-req.HeadroomPct/100)-fixed[ds], startUse[s]) + 1e-9
	}

	memo := make([]map[uint64]subsetScore, len(l.stores))
	for s := range memo {
		memo[s] = map[uint64]subsetScore{}
	}
	evalSubset := func(s int, mask uint64) (subsetScore, error) {
		if got, ok := memo[s][mask]; ok {
			return got, nil
		}
		var disks []int
		for j, i := range l.movable {
			if mask&(1<<uint(j)) != 0 {
				disks = append(disks, i)
			}
		}
		ts, err := l.storeTruths(l.stores[s], disks, w)
		if err != nil {
			return subsetScore{}, err
		}
		var sc subsetScore
		for _, t := range ts {
			sc.iops += t.iops
			sc.latSum += t.latSum
		}
		memo[s][mask] = sc
		return sc, nil
	}

	masks := make([]uint64, len(l.stores))
	used := make([]float64, len(l.stores))
	assign := make([]int, n)
	var bestAssign, worstAssign []int
	bestIOPS, bestLat := -1.0, math.Inf(1)
	worstIOPS := math.Inf(1)
	count := 0
	var walk func(j int) error
	walk = func(j int) error {
		if j == n {
			var iops, lat float64
			for s := range l.stores {
				sc, err := evalSubset(s, masks[s])
				if err != nil {
					return err
				}
				iops += sc.iops
				lat += sc.latSum
			}
			count++
			avgLat := safeDiv(lat, iops)
			if iops > bestIOPS*(1+1e-12) || (iops >= bestIOPS*(1-1e-12) && avgLat < bestLat) {
				bestIOPS, bestLat, bestAssign = iops, avgLat, append([]int(nil), assign...)
			}
			if iops < worstIOPS {
				worstIOPS, worstAssign = iops, append([]int(nil), assign...)
			}
			return nil
		}
		size := l.disks[l.movable[j]].sizeGB
		for _, s := range options[j] {
			if used[s]+size > room[s] {
				continue
			}
			used[s] += size
			masks[s] |= 1 << uint(j)
			assign[j] = s
			if err := walk(j + 1); err != nil {
				return err
			}
			masks[s] &^= 1 << uint(j)
			used[s] -= size
		}
		return nil
	}
	if err := walk(0); err != nil {
		return nil, err
	}
	if bestAssign == nil {
		return nil, errors.New("no placement fits the datastores' space")
	}
	answer := &bestAnswer{Placements: count}
	for s := range memo {
		answer.Evaluated += len(memo[s])
	}
	for _, pick := range []struct {
		assign []int
		into   *placementTruth
	}{{bestAssign, &answer.Best}, {worstAssign, &answer.Worst}} {
		where := make([]string, len(l.disks))
		placement := map[string]string{}
		for i, d := range l.disks {
			where[i] = d.home
		}
		for j, i := range l.movable {
			where[i] = l.stores[pick.assign[j]]
			placement[l.disks[i].id] = where[i]
		}
		t, err := l.truth(where, w)
		if err != nil {
			return nil, err
		}
		t.Placement = placement
		*pick.into = t
	}
	return answer, nil
}
