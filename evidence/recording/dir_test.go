package recording

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestDirListsUnderThePrefix: a listing holds the keys under its prefix,
// a partial last name included, and nothing of other sessions; a prefix
// nothing was written under lists nothing.
func TestDirListsUnderThePrefix(t *testing.T) {
	d := &Dir{Root: t.TempDir()}
	ctx := context.Background()
	for _, k := range []string{"sessions/prod/shop/s1/u1/segments/00000000.cast", "sessions/prod/shop/s1/u1/segments/00000001.cast",
		"sessions/prod/shop/s1/u1/manifest.json", "sessions/prod/shop/s2/u2/segments/00000000.cast", "audit/relay/0001.json"} {
		if _, err := d.Put(ctx, k, []byte("x"), time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	for prefix, want := range map[string][]string{
		"sessions/prod/shop/s1/u1/segments/":     {"sessions/prod/shop/s1/u1/segments/00000000.cast", "sessions/prod/shop/s1/u1/segments/00000001.cast"},
		"sessions/prod/shop/s1/u1/segments/0000": {"sessions/prod/shop/s1/u1/segments/00000000.cast", "sessions/prod/shop/s1/u1/segments/00000001.cast"},
		"sessions/prod/shop/s1/u1/man":           {"sessions/prod/shop/s1/u1/manifest.json"},
		"sessions/prod/shop/":                    {"sessions/prod/shop/s1/u1/manifest.json", "sessions/prod/shop/s1/u1/segments/00000000.cast", "sessions/prod/shop/s1/u1/segments/00000001.cast", "sessions/prod/shop/s2/u2/segments/00000000.cast"},
		"sessions/prod/shop/s3/":                 nil,
		"aud":                                    {"audit/relay/0001.json"},
	} {
		got, err := d.List(ctx, prefix)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("List(%q) = %v, %v; want %v", prefix, got, err, want)
		}
	}
}
