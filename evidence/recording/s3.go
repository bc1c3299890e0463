package recording

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// S3Options say where the evidence bucket is and how to reach it.
type S3Options struct {
	Bucket string `json:"bucket"`
	Region string `json:"region,omitempty"`
	// Endpoint is a non-AWS S3 endpoint (empty for AWS).
	Endpoint string `json:"endpoint,omitempty"`
	// PathStyle addresses the bucket in the path instead of the host name.
	PathStyle bool `json:"pathStyle,omitempty"`
	// AccessKey and SecretKey are static credentials; empty uses the default
	// chain (environment, IRSA/web identity, instance roles). In a config
	// file, prefer the environment (AWS_ACCESS_KEY_ID) to keys written down.
	AccessKey string `json:"accessKey,omitempty"`
	SecretKey string `json:"secretKey,omitempty"`
	// Mode is COMPLIANCE (default: nobody can shorten or remove the lock,
	// root included) or GOVERNANCE (holders of a bypass permission can).
	Mode types.ObjectLockRetentionMode `json:"mode,omitempty"`
}

// S3 is the production store: every object is written with Object Lock and
// a SHA-256 checksum the server verifies.
type S3 struct {
	Client *s3.Client
	Bucket string
	Mode   types.ObjectLockRetentionMode
}

// NewS3 builds the store's client.
func NewS3(ctx context.Context, o S3Options) (*S3, error) {
	if o.Bucket == "" {
		return nil, errors.New("recording store: no bucket")
	}
	var opts []func(*config.LoadOptions) error
	if o.Region != "" {
		opts = append(opts, config.WithRegion(o.Region))
	}
	if o.AccessKey != "" {
		opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(o.AccessKey, o.SecretKey, "")))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("recording store: %w", err)
	}
	client := s3.NewFromConfig(cfg, func(so *s3.Options) {
		so.UsePathStyle = o.PathStyle
		if o.Endpoint != "" {
			so.BaseEndpoint = aws.String(o.Endpoint)
		}
	})
	mode := o.Mode
	if mode == "" {
		mode = types.ObjectLockRetentionModeCompliance
	}
	return &S3{Client: client, Bucket: o.Bucket, Mode: mode}, nil
}

// Check refuses a bucket that is unreachable or has no Object Lock: no
// store, no session.
func (s *S3) Check(ctx context.Context) error {
	out, err := s.Client.GetObjectLockConfiguration(ctx, &s3.GetObjectLockConfigurationInput{Bucket: aws.String(s.Bucket)})
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode() == "ObjectLockConfigurationNotFoundError" {
		return fmt.Errorf("recording bucket %s has no Object Lock: evidence there could be deleted", s.Bucket)
	}
	if err != nil {
		return fmt.Errorf("recording bucket %s: Object Lock could not be confirmed: %w", s.Bucket, err)
	}
	if out.ObjectLockConfiguration == nil || out.ObjectLockConfiguration.ObjectLockEnabled != types.ObjectLockEnabledEnabled {
		return fmt.Errorf("recording bucket %s has no Object Lock: evidence there could be deleted", s.Bucket)
	}
	return nil
}

// Put writes a new locked object only if the key does not exist: the
// condition is the server's (If-None-Match), so two writers racing for a
// key cannot both win, and returns the version the bucket gave it.
func (s *S3) Put(ctx context.Context, key string, data []byte, retainUntil time.Time) (string, error) {
	sum := sha256.Sum256(data)
	out, err := s.Client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:                    aws.String(s.Bucket),
		Key:                       aws.String(key),
		Body:                      bytes.NewReader(data),
		ContentLength:             aws.Int64(int64(len(data))),
		ChecksumSHA256:            aws.String(base64.StdEncoding.EncodeToString(sum[:])),
		ObjectLockMode:            types.ObjectLockMode(s.Mode),
		ObjectLockRetainUntilDate: aws.Time(retainUntil),
		IfNoneMatch:               aws.String("*"),
	})
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) && (apiErr.ErrorCode() == "PreconditionFailed" || apiErr.ErrorCode() == "ConditionalRequestConflict") {
		return "", fmt.Errorf("%s: %w", key, ErrExists)
	}
	if err != nil {
		return "", fmt.Errorf("writing %s: %w", key, err)
	}
	if aws.ToString(out.VersionId) == "" {
		// Object Lock requires versioning: no version means a bucket that
		// cannot keep the evidence apart from what is written over it.
		return "", fmt.Errorf("writing %s: the bucket gave no version ID: it has no versioning", key)
	}
	return aws.ToString(out.VersionId), nil
}

// Current is the version a plain read of key sees now.
func (s *S3) Current(ctx context.Context, key string) (string, error) {
	out, err := s.Client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String(key)})
	if isMissing(err) {
		return "", fmt.Errorf("%s: %w", key, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", key, err)
	}
	return aws.ToString(out.VersionId), nil
}

// Get reads the given version of key ("" the current one).
func (s *S3) Get(ctx context.Context, key, version string) ([]byte, error) {
	in := &s3.GetObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String(key)}
	if version != "" {
		in.VersionId = aws.String(version)
	}
	out, err := s.Client.GetObject(ctx, in)
	if isMissing(err) {
		return nil, fmt.Errorf("%s: %w", key, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", key, err)
	}
	defer out.Body.Close()
	return io.ReadAll(out.Body)
}

// List returns the keys under prefix, in order.
func (s *S3) List(ctx context.Context, prefix string) ([]string, error) {
	var keys []string
	p := s3.NewListObjectsV2Paginator(s.Client, &s3.ListObjectsV2Input{Bucket: aws.String(s.Bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", prefix, err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys, nil
}

// isMissing is S3's answer for a key (or version) that is not there, or
// whose current version is a delete marker.
func isMissing(err error) bool {
	var nf *types.NotFound
	var nk *types.NoSuchKey
	var apiErr smithy.APIError
	return errors.As(err, &nf) || errors.As(err, &nk) ||
		(errors.As(err, &apiErr) && (apiErr.ErrorCode() == "NoSuchVersion" || apiErr.ErrorCode() == "MethodNotAllowed"))
}

// IsAccessDenied reports the answer S3 gives to a delete or a retention cut
// that Object Lock forbids.
func IsAccessDenied(err error) bool {
	var apiErr smithy.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode() == "AccessDenied"
}
