package chart

import (
	"bufio"
	"bytes"
	"errors"
	"io"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Workload is a Deployment or StatefulSet in a rendered manifest: what the
// tests hold the chart's pods to.
type Workload struct {
	Kind string `json:"kind"`
	// Metadata is the workload's own (its name, labels).
	Metadata metav1.ObjectMeta `json:"metadata"`
	Spec     struct {
		Replicas *int32                 `json:"replicas"`
		Template corev1.PodTemplateSpec `json:"template"`
	} `json:"spec"`
}

// Workloads are the Deployments and StatefulSets in a rendered manifest
// (documents separated by ---), in order.
func Workloads(manifest []byte) ([]Workload, error) {
	dec := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifest)))
	var out []Workload
	for {
		doc, err := dec.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		var w Workload
		if err := yaml.Unmarshal(doc, &w); err != nil {
			return nil, err
		}
		if w.Kind == "Deployment" || w.Kind == "StatefulSet" {
			out = append(out, w)
		}
	}
}
