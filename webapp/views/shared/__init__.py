"""What the audiences' packages share and import (never each other): how a place is
shown, the words, a drop's view, a site pass in the visitor's hands, the admin token's
check, the error pages and replies, a request's JSON body, charts, the puzzle's words."""
