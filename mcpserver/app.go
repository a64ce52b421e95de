package mcpserver

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sessionmem/sessionmem/viewer"
)

// The session viewer as an MCP App (the io.modelcontextprotocol/ui extension, SEP-1865): a
// ui:// resource holding viewer.AppHTML, which session_list, session_resume and
// session_search name in their _meta, so a host that supports the extension renders it beside
// their results; the app then calls those tools through the host. Hosts without the
// extension ignore _meta and the resource: the tools' results are the same for every client.

// appToolMeta is the _meta a tool with the app carries: the resource under "ui" (the current
// form) and under "ui/resourceUri" (the form hosts read before it).
func appToolMeta() *mcp.Meta {
	return &mcp.Meta{AdditionalFields: map[string]any{
		"ui":             map[string]any{"resourceUri": viewer.AppResourceURI},
		"ui/resourceUri": viewer.AppResourceURI,
	}}
}

// withApp gives a tool the viewer app.
func withApp(st server.ServerTool) server.ServerTool {
	st.Tool.Meta = appToolMeta()
	return st
}

// addApp registers the app's resource. Its _meta asks for a border and declares no
// network origins: the app needs none (its data comes through the host).
func addApp(s *server.MCPServer) {
	s.AddResource(mcp.NewResource(viewer.AppResourceURI, "Session viewer",
		mcp.WithResourceDescription("Browse, read and search the stored sessions (an MCP App: hosts that support the io.modelcontextprotocol/ui extension render it for session_list, session_resume and session_search)."),
		mcp.WithMIMEType(viewer.AppMIMEType)),
		func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{
				URI:      viewer.AppResourceURI,
				MIMEType: viewer.AppMIMEType,
				Text:     viewer.AppHTML(),
				Meta:     map[string]any{"ui": map[string]any{"prefersBorder": true, "csp": map[string]any{}}},
			}}, nil
		})
}
