package evidence_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/tower-dev/breakglass/evidence/recording"
)

// TestLockedRecording records a session into the locked bucket: every
// segment and final file is a locked object that cannot be deleted or have
// its retention shortened.
func TestLockedRecording(t *testing.T) {
	store, err := newStore(locked)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	retain := time.Now().Add(365 * 24 * time.Hour)
	rec, err := recording.New(ctx, store, recording.Prefix("shop", "s1"), recording.Options{RetainUntil: retain, SegmentBytes: 64})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		if err := rec.Output(ctx, []byte(fmt.Sprintf("line %d of the session\r\n", i))); err != nil {
			t.Fatal(err)
		}
	}
	m, _, err := rec.Close(ctx, "shop/s1")
	if err != nil {
		t.Fatal(err)
	}
	if m.Segments < 3 {
		t.Fatalf("%d segments: the recording did not stream", m.Segments)
	}
	key := recording.Prefix("shop", "s1") + recording.CastFile
	head, err := store.Client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(locked), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	if head.ObjectLockMode != types.ObjectLockModeCompliance || head.ObjectLockRetainUntilDate == nil || head.ObjectLockRetainUntilDate.Before(retain.Add(-time.Second)) {
		t.Fatalf("the recording is not locked in COMPLIANCE until %v: %v %v", retain, head.ObjectLockMode, head.ObjectLockRetainUntilDate)
	}

	t.Run("cannot be deleted", func(t *testing.T) {
		_, err := store.Client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(locked), Key: aws.String(key), VersionId: head.VersionId})
		if !recording.IsAccessDenied(err) {
			t.Fatalf("deleting the locked version: %v", err)
		}
	})
	t.Run("cannot be shortened", func(t *testing.T) {
		_, err := store.Client.PutObjectRetention(ctx, &s3.PutObjectRetentionInput{Bucket: aws.String(locked), Key: aws.String(key), VersionId: head.VersionId,
			Retention: &types.ObjectLockRetention{Mode: types.ObjectLockRetentionModeCompliance, RetainUntilDate: aws.Time(time.Now().Add(time.Hour))}})
		if !recording.IsAccessDenied(err) {
			t.Fatalf("shortening the retention: %v", err)
		}
	})
	t.Run("cannot be overwritten through the store", func(t *testing.T) {
		if err := store.Put(ctx, key, []byte("forged"), retain); !errors.Is(err, recording.ErrExists) {
			t.Fatalf("overwrite: %v", err)
		}
		got, err := store.Get(ctx, key)
		if err != nil || bytes.Contains(got, []byte("forged")) || !strings.Contains(string(got), "line 9 of the session") {
			t.Fatalf("the recording changed: %v", err)
		}
	})
}

// TestBucketWithoutObjectLockRefused: no locked store, no session.
func TestBucketWithoutObjectLockRefused(t *testing.T) {
	store, err := newStore(unlocked)
	if err != nil {
		t.Fatal(err)
	}
	_, err = recording.New(context.Background(), store, recording.Prefix("shop", "s2"), recording.Options{RetainUntil: time.Now().Add(time.Hour)})
	if err == nil || !strings.Contains(err.Error(), "has no Object Lock") {
		t.Fatalf("a recording started on a bucket without Object Lock: %v", err)
	}
	missing, err := newStore("no-such-bucket")
	if err != nil {
		t.Fatal(err)
	}
	if err := missing.Check(context.Background()); err == nil {
		t.Fatal("a missing bucket passed the check")
	}
}

// TestChecksumEnforced: the server refuses a body that does not match the
// SHA-256 the store declares.
func TestChecksumEnforced(t *testing.T) {
	store, err := newStore(locked)
	if err != nil {
		t.Fatal(err)
	}
	_, err = store.Client.PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: aws.String(locked), Key: aws.String("checksum-test"), Body: strings.NewReader("the bytes"),
		ChecksumSHA256: aws.String("47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="), // the SHA-256 of nothing
	})
	if err == nil {
		t.Fatal("a body with a wrong checksum was stored")
	}
}
