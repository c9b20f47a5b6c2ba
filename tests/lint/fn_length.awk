# A function is at most 120 lines, so that it reads on a screen or two: prints
# each function of the files given whose body, the lines between its
# opening and closing brace in column 0, is longer, and exits 1 if any is.
# A function may be longer when the comment just above it says why, with
# the words "over 120 lines" in it.
#
# Kernel style is assumed, as STYLE.md asks: the signature starts in
# column 0 and ends with ")", and the body's braces stand alone in
# column 0.
BEGIN { limit = 120; bad = 0 }
FNR == 1 { sig = ""; sigline = 0; last = ""; reason = 0; incomment = 0; open = 0 }
{
	line = $0
	if (open) {
		if (line ~ /^\}/) {
			n = FNR - open - 1
			if (n > limit && !why) {
				printf "%s:%d: %s has %d lines (limit %d): split it into named steps, or say above it why it is over 120 lines\n", FILENAME, sigline, name, n, limit
				bad = 1
			}
			open = 0
			reason = 0
		}
		next
	}
	if (line ~ /^\/\*/ || incomment) {
		if (line ~ /^\/\*/)
			reason = 0
		incomment = (line !~ /\*\//)
		if (tolower(line) ~ /over 120 lines/)
			reason = 1
		next
	}
	if (line ~ /^[A-Za-z_].*\(/ && line !~ /;[ \t]*$/ && sig == "") {
		sig = line
		sigline = FNR
		sigreason = reason
	}
	if (line ~ /^\{/ && sig != "" && last ~ /\)[ \t]*$/) {
		name = sig
		sub(/\(.*/, "", name)
		sub(/.*[ \t*]/, "", name)
		why = sigreason
		open = FNR
		sig = ""
		next
	}
	if (line ~ /^[ \t]*$/ || line ~ /;[ \t]*$/ || line ~ /^\}/) {
		sig = ""
		if (line !~ /^[ \t]*$/)
			reason = 0
	}
	if (line !~ /^[ \t]*$/)
		last = line
}
END { exit bad }
