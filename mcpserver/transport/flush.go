package transport

import (
	"context"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// notificationDelay is how long a tool that sent notifications waits before answering.
const notificationDelay = 10 * time.Millisecond

// NotificationFlush works around lost notifications (mcp-go v1.2.1, upstream #969): a
// progress notification sent just before a handler returns is dropped or overtaken by the
// response. Waiting 10 ms before answering delivered all of them in testing. Only calls that
// can send notifications (they carry a progress token) pay for it.
func NotificationFlush(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := next(ctx, req)
		if req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil {
			select {
			case <-time.After(notificationDelay):
			case <-ctx.Done():
			}
		}
		return res, err
	}
}
