package webhook

import (
	"time"

	"k8s.io/utils/clock"
	"k8s.io/utils/lru"
)

// successCache remembers verified (digest, policy) pairs for a while. Only
// successes are kept: a failure is checked again next time, so a signature
// pushed late is seen, and nothing stale ever allows.
type successCache struct {
	lru   *lru.Cache // safe for concurrent use
	ttl   time.Duration
	clock clock.PassiveClock
}

func newSuccessCache(size int, ttl time.Duration, c clock.PassiveClock) *successCache {
	return &successCache{lru: lru.New(size), ttl: ttl, clock: c}
}

func (s *successCache) key(digest, policy string) string { return policy + "\x00" + digest }

func (s *successCache) ok(digest, policy string) bool {
	v, found := s.lru.Get(s.key(digest, policy))
	if !found {
		return false
	}
	if s.clock.Now().After(v.(time.Time)) {
		s.lru.Remove(s.key(digest, policy))
		return false
	}
	return true
}

func (s *successCache) add(digest, policy string) {
	s.lru.Add(s.key(digest, policy), s.clock.Now().Add(s.ttl))
}
