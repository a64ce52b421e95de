package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sessionmem/sessionmem/mcpserver/transport"
	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/prompts"
)

// addPrompts offers the compaction templates as MCP prompts, so a person can ask their own
// model for a checkpoint in the same shape the server's summarizers produce.
func addPrompts(s *server.MCPServer, svc *memory.Service) {
	for _, t := range prompts.All() {
		opts := []mcp.PromptOption{mcp.WithPromptDescription(t.Description)}
		for _, a := range t.Args {
			argOpts := []mcp.ArgumentOption{mcp.ArgumentDescription(a.Description)}
			if a.Required {
				argOpts = append(argOpts, mcp.RequiredArgument())
			}
			opts = append(opts, mcp.WithArgument(a.Name, argOpts...))
		}
		s.AddPrompt(mcp.NewPrompt(t.Name, opts...), func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			args := map[string]string{}
			for k, v := range req.Params.Arguments {
				if v != "" { // clients send empty strings for optional arguments left blank
					args[k] = v
				}
			}
			text, err := t.Render(args)
			if err != nil {
				return nil, fmt.Errorf("prompt %s: %s", t.Name, svc.RedactText(err.Error()))
			}
			// The arguments are echoed into the prompt: the same redaction as everything else.
			text = svc.RedactText(text)
			// MCP prompts carry no system role: the summarizer's instructions lead the message.
			return mcp.NewGetPromptResult(t.Description, []mcp.PromptMessage{
				mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent(prompts.System()+"\n\n"+text)),
			}), nil
		})
	}
}

// Resource URI templates. Variables match one path segment, so the three do not overlap.
const (
	uriTranscript = "session://{id}"
	uriSummary    = "session://{id}/summary"
	uriFiles      = "session://{id}/files"
)

func addResources(s *server.MCPServer, svc *memory.Service, logger *slog.Logger) {
	if logger == nil {
		logger = discard
	}
	s.AddResourceTemplate(mcp.NewResourceTemplate(uriTranscript, "Session transcript",
		mcp.WithTemplateDescription("A whole session as JSON: metadata, latest summary, file lists and every message on the current path (compacted ones included), oldest first."),
		mcp.WithTemplateMIMEType("application/json")),
		func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			tr, err := transcript(ctx, svc, logger, req)
			if err != nil {
				return nil, err
			}
			tr.ReadFiles, tr.ModifiedFiles = orEmpty(tr.ReadFiles), orEmpty(tr.ModifiedFiles)
			tr.Messages = normalizeMessages(tr.Messages)
			b, err := json.Marshal(tr)
			if err != nil {
				return nil, fmt.Errorf("encode transcript: %w", err)
			}
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "application/json", Text: string(b)}}, nil
		})
	s.AddResourceTemplate(mcp.NewResourceTemplate(uriSummary, "Session summary",
		mcp.WithTemplateDescription("The latest compaction summary of a session as Markdown text (empty if it was never compacted)."),
		mcp.WithTemplateMIMEType("text/markdown")),
		func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			tr, err := transcript(ctx, svc, logger, req)
			if err != nil {
				return nil, err
			}
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "text/markdown", Text: tr.Summary}}, nil
		})
	s.AddResourceTemplate(mcp.NewResourceTemplate(uriFiles, "Session files",
		mcp.WithTemplateDescription(`The files a session read and modified, as JSON {"read_files":[…],"modified_files":[…]}.`),
		mcp.WithTemplateMIMEType("application/json")),
		func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			tr, err := transcript(ctx, svc, logger, req)
			if err != nil {
				return nil, err
			}
			b, err := json.Marshal(struct {
				ReadFiles     []string `json:"read_files"`
				ModifiedFiles []string `json:"modified_files"`
			}{orEmpty(tr.ReadFiles), orEmpty(tr.ModifiedFiles)})
			if err != nil {
				return nil, fmt.Errorf("encode files: %w", err)
			}
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "application/json", Text: string(b)}}, nil
		})
}

// transcript reads the session a resource URI names. Template variables arrive as []string.
// A missing session's error starts with the prefix FixResponse looks for (mcp-go reports
// every handler error as -32603; the transports turn this one into resource-not-found).
func transcript(ctx context.Context, svc *memory.Service, logger *slog.Logger, req mcp.ReadResourceRequest) (memory.Transcript, error) {
	notFound := func(detail string) error {
		prefix := transport.NotFoundLegacy
		if server.IsModernRequest(ctx) {
			prefix = transport.NotFoundModern
		}
		return &resourceError{msg: prefix + svc.RedactText(req.Params.URI) + ": " + detail}
	}
	id := templateVar(req.Params.Arguments["id"])
	if id == "" {
		return memory.Transcript{}, notFound("no session id in the URI")
	}
	tr, err := svc.Transcript(ctx, id)
	if err != nil {
		if errors.Is(err, memory.ErrNotFound) || errors.Is(err, memory.ErrInvalid) {
			var me *memory.Error
			detail := err.Error()
			if errors.As(err, &me) {
				detail = me.Error()
			}
			return memory.Transcript{}, notFound(svc.RedactText(detail))
		}
		// As for tool errors (toolError): the text names no server file; the log has it.
		uri := svc.RedactText(req.Params.URI)
		var me *memory.Error
		if !errors.As(err, &me) {
			me = memory.StoreCondition(err)
		}
		if me != nil {
			if me.Cause != nil {
				logger.Warn("resource read failed", "uri", uri, "err", me.Cause)
			}
			return memory.Transcript{}, fmt.Errorf("%s: %s", uri, svc.RedactText(me.Error()))
		}
		logger.Error("resource read failed: internal error", "uri", uri, "err", err)
		return memory.Transcript{}, fmt.Errorf("%s: internal error: %s (the server's log has the details)", uri, svc.RedactText(scrubPaths(err.Error())))
	}
	return tr, nil
}

// resourceError is a missing session's resource: it matches server.ErrResourceNotFound.
type resourceError struct{ msg string }

func (e *resourceError) Error() string { return e.msg }
func (e *resourceError) Unwrap() error { return server.ErrResourceNotFound }

func templateVar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []string:
		return strings.Join(x, "/")
	case []any:
		parts := make([]string, 0, len(x))
		for _, p := range x {
			parts = append(parts, fmt.Sprint(p))
		}
		return strings.Join(parts, "/")
	}
	return ""
}
