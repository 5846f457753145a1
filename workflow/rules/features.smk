# Stage: features. Rules are added by the features work (see issue tracker).
