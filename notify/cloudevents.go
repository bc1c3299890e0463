package notify

import (
	"encoding/json"
	"time"
)

// The generic webhook's formats.
const (
	// FormatJSON posts the Event alone, as notifyURL always has.
	FormatJSON = "json"
	// FormatCloudEvents posts a CloudEvents 1.0 event in structured mode
	// (application/cloudevents+json) whose data is the Event.
	FormatCloudEvents = "cloudevents"
)

// CloudEventsContentType is structured mode's media type (CloudEvents 1.0
// JSON format, section 3).
const CloudEventsContentType = "application/cloudevents+json"

// CloudEventTypePrefix comes before an event's kind in its type, reverse
// DNS as the spec advises: dev.tower.breakglass.request.new.
const CloudEventTypePrefix = "dev.tower.breakglass."

// cloudEvent is the envelope, written by hand: six attributes do not
// warrant the SDK and its transports.
type cloudEvent struct {
	SpecVersion     string `json:"specversion"`
	ID              string `json:"id"`
	Source          string `json:"source"`
	Type            string `json:"type"`
	Subject         string `json:"subject,omitempty"`
	Time            string `json:"time,omitempty"`
	DataContentType string `json:"datacontenttype"`
	Data            Event  `json:"data"`
}

// cloudEventJSON is n as a structured-mode CloudEvent. source is the
// sender ("breakglass/relay"); the cluster is added, since (source, id)
// must be unique and each cluster's Sessions are named on their own.
func cloudEventJSON(n Notice, source string) ([]byte, error) {
	if source == "" {
		source = "breakglass"
	}
	if n.Cluster != "" {
		source += "/" + n.Cluster
	}
	return json.Marshal(cloudEvent{
		SpecVersion:     "1.0",
		ID:              n.ID,
		Source:          source,
		Type:            CloudEventTypePrefix + n.Kind,
		Subject:         n.Namespace + "/" + n.Session,
		Time:            n.At.UTC().Format(time.RFC3339),
		DataContentType: "application/json",
		Data:            n.Event,
	})
}
