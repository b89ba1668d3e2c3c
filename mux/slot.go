package mux

import "github.com/lockmux/lockmux/mux/internal/cluster"

// SlotCount is the number of hash slots of a Redis Cluster.
const SlotCount = cluster.SlotCount

// Slot returns the hash slot of key in a Redis Cluster: the CRC16 of the
// key, or of its hash tag (the text between its first "{" and the first
// "}" after it, when that text is not empty), modulo SlotCount. Keys that
// share a hash tag share a slot.
func Slot(key string) int { return cluster.SlotOf(key) }

// SlotTag returns a hash tag of slot: every key that holds "{" +
// SlotTag(slot) + "}" is in slot. The tag is the smallest number, in
// decimal, whose slot is slot, the same in every process: clients that
// name a channel or a key after a slot agree on its name.
func SlotTag(slot int) string { return cluster.SlotTag(slot) }
