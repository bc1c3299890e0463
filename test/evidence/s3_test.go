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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tower-dev/breakglass/api/v1alpha1"
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
	ref := recording.Ref{Cluster: "prod", Namespace: "shop", Name: "s1", UID: "0c1d-uid"}
	rec, err := recording.New(ctx, store, ref, recording.Options{RetainUntil: retain, SegmentBytes: 64})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		if err := rec.Output(ctx, []byte(fmt.Sprintf("line %d of the session\r\n", i))); err != nil {
			t.Fatal(err)
		}
	}
	done, err := rec.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m := done.Manifest
	if m.Segments < 3 {
		t.Fatalf("%d segments: the recording did not stream", m.Segments)
	}
	if done.Version == "" || m.Files[recording.CastFile].Version == "" || m.Files[recording.TranscriptFile].Version == "" {
		t.Fatalf("the bucket's versions are not recorded: manifest %q, files %+v", done.Version, m.Files)
	}
	key := ref.Prefix() + recording.CastFile
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
		if _, err := store.Put(ctx, key, []byte("forged"), retain); !errors.Is(err, recording.ErrExists) {
			t.Fatalf("overwrite: %v", err)
		}
		got, err := store.Get(ctx, key, "")
		if err != nil || bytes.Contains(got, []byte("forged")) || !strings.Contains(string(got), "line 9 of the session") {
			t.Fatalf("the recording changed: %v", err)
		}
	})
	// Someone else with the bucket's keys writes over the recording without
	// the condition: the bucket keeps the locked version and makes the new
	// one current. The evidence reads its own versions back, and reports
	// the newer ones without serving them.
	t.Run("an overwrite is reported, never served", func(t *testing.T) {
		ev := recording.EvidenceOf(ref, done, "", false)
		forged := []byte(strings.Replace(string(done.Body), `"endedAbnormally": false`, `"endedAbnormally": true`, 1))
		for name, data := range map[string][]byte{recording.ManifestFile: forged, recording.CastFile: []byte("forged cast")} {
			if _, err := store.Client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(locked), Key: aws.String(ref.Prefix() + name),
				Body: bytes.NewReader(data), ObjectLockMode: types.ObjectLockModeCompliance, ObjectLockRetainUntilDate: aws.Time(retain)}); err != nil {
				t.Fatal(err)
			}
		}
		if plain, _ := store.Get(ctx, ref.Prefix()+recording.ManifestFile, ""); !bytes.Equal(plain, forged) {
			t.Fatal("the overwrite did not make a new current version: the test proves nothing")
		}
		got, body, err := recording.ReadManifest(ctx, store, ref, ev)
		if !errors.Is(err, recording.ErrOverwritten) || !bytes.Equal(body, done.Body) || got.EndedAbnormally {
			t.Fatalf("the manifest read back: %v, genuine %v", err, bytes.Equal(body, done.Body))
		}
		cast, err := recording.ReadFile(ctx, store, ref, got, recording.CastFile)
		if !errors.Is(err, recording.ErrOverwritten) || !strings.Contains(string(cast), "line 9 of the session") {
			t.Fatalf("the cast read back: %v, %q", err, cast)
		}
		transcript, err := recording.ReadFile(ctx, store, ref, got, recording.TranscriptFile)
		if err != nil || len(transcript) == 0 {
			t.Fatalf("the transcript, not written over, reads clean: %v", err)
		}
		// A delete marker hides the object from a plain read, not from the evidence.
		if _, err := store.Client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(locked), Key: aws.String(ref.Prefix() + recording.TranscriptFile)}); err != nil {
			t.Fatal(err)
		}
		if transcript, err = recording.ReadFile(ctx, store, ref, got, recording.TranscriptFile); !errors.Is(err, recording.ErrOverwritten) || len(transcript) == 0 {
			t.Fatalf("the transcript behind a delete marker: %v", err)
		}
	})
}

// TestBucketWithoutObjectLockRefused: no locked store, no session.
func TestBucketWithoutObjectLockRefused(t *testing.T) {
	store, err := newStore(unlocked)
	if err != nil {
		t.Fatal(err)
	}
	_, err = recording.New(context.Background(), store, recording.Ref{Cluster: "prod", Namespace: "shop", Name: "s2", UID: "u2"}, recording.Options{RetainUntil: time.Now().Add(time.Hour)})
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

// TestSweeperFinalizesInS3: a relay streamed segments to the bucket and
// died; the sweeper's finalizer assembles them there, records the
// versions, and the relay's reader reads the result back by the Session.
func TestSweeperFinalizesInS3(t *testing.T) {
	store, err := newStore(locked)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s := &v1alpha1.Session{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "s9", UID: "9e9e-uid"}}
	rec, err := recording.New(ctx, store, recording.RefOf("prod", s), recording.Options{RetainUntil: time.Now().Add(time.Hour), SegmentBytes: 32})
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Output(ctx, []byte("$ cat /etc/hostname\r\nweb-1\r\n")); err != nil {
		t.Fatal(err)
	}
	if err := rec.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// The relay dies here: no Close.
	f := &recording.SessionFinalizer{Store: store, Cluster: "prod", Retention: time.Hour, URI: "s3://" + locked + "/"}
	ev, err := f.Finalize(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if ev.ManifestVersion == "" || ev.Cluster != "prod" || !strings.HasPrefix(ev.URIs[0], "s3://"+locked+"/sessions/prod/shop/s9/9e9e-uid/") {
		t.Fatalf("the Session's evidence: %+v", ev)
	}
	m, _, err := recording.ReadManifest(ctx, store, recording.RefOf("prod", s), ev)
	if err != nil || !m.EndedAbnormally {
		t.Fatalf("reading back what the sweeper finalized: %v, %+v", err, m)
	}
	cast, err := recording.ReadFile(ctx, store, recording.RefOf("prod", s), m, recording.CastFile)
	if err != nil || !strings.Contains(string(cast), "web-1") {
		t.Fatalf("the cast: %v", err)
	}
}
