"""What a read leaves behind: verdict.json and its chart, the sealed bundle and its report."""
