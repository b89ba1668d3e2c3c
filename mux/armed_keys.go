package mux

import "hash/maphash"

// armedSeed seeds the hashes of armed keys.
var armedSeed = maphash.MakeSeed()

// armedKeys are the keys armed on one subscription connection, each with
// the tag of the arming in effect. They are found by a 64-bit hash of the
// key, which the entry holds once: a key is hashed once per lookup, and
// an entry is smaller than one keyed by the string. Keys whose hash is
// taken by another key go to colliding, empty but for the rarest luck.
type armedKeys struct {
	byHash    map[uint64]armedKey
	colliding map[string]armedKey
}

// armedKey is a key armed by the reply to a Track's read.
type armedKey struct {
	key string // as given to Track, so that reports do not allocate
	tag uint64
}

// makeArmedKeys returns an empty set of armed keys.
func makeArmedKeys() armedKeys {
	return armedKeys{byHash: make(map[uint64]armedKey)}
}

// len returns the number of armed keys.
func (a *armedKeys) len() int { return len(a.byHash) + len(a.colliding) }

// arm arms key with tag, in place of its arming in effect if any.
func (a *armedKeys) arm(key string, tag uint64) {
	hash := maphash.String(armedSeed, key)
	if armed, ok := a.byHash[hash]; !ok || armed.key == key {
		a.byHash[hash] = armedKey{key: key, tag: tag}
		if a.colliding != nil {
			delete(a.colliding, key) // armed there while its hash was taken
		}
		return
	}
	if a.colliding == nil {
		a.colliding = make(map[string]armedKey)
	}
	a.colliding[key] = armedKey{key: key, tag: tag}
}

// disarm ends the arming of key, and returns it (its key the string
// given to Track) if key was armed.
func (a *armedKeys) disarm(key []byte) (armedKey, bool) {
	hash := maphash.Bytes(armedSeed, key)
	if armed, ok := a.byHash[hash]; ok && armed.key == string(key) {
		delete(a.byHash, hash)
		return armed, true
	}
	if armed, ok := a.colliding[string(key)]; ok {
		delete(a.colliding, armed.key)
		return armed, true
	}
	return armedKey{}, false
}

// disarmAll ends every arming, and appends them to reported, made into
// invalidations of server node for cause and err.
func (a *armedKeys) disarmAll(reported []Invalidation, node int, cause InvalidationCause, err error) []Invalidation {
	for _, armed := range a.byHash {
		reported = append(reported, Invalidation{Node: node, Key: armed.key, Tag: armed.tag, Cause: cause, Err: err})
	}
	for _, armed := range a.colliding {
		reported = append(reported, Invalidation{Node: node, Key: armed.key, Tag: armed.tag, Cause: cause, Err: err})
	}
	a.clear()
	return reported
}

// clear ends every arming without a report.
func (a *armedKeys) clear() {
	clear(a.byHash)
	a.colliding = nil
}
