package nb

import (
	"encoding/json"
	"time"
)

// MarshalJSON writes the state with its problem as the problem's text (an
// error's fields, as encoding/json would write them, lose the message).
func (s SourceState) MarshalJSON() ([]byte, error) {
	var problem *string
	if s.Problem != nil {
		text := s.Problem.Error()
		problem = &text
	}
	return json.Marshal(struct {
		Name       string
		Loaded     bool
		Keys       int
		Problem    *string `json:",omitempty"`
		LastUpdate time.Time
	}{s.Name, s.Loaded, s.Keys, problem, s.LastUpdate})
}
