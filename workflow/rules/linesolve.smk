# Stage: linesolve.
