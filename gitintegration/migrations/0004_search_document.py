from django.db import migrations

from collab.db.fulltext import AddSearchDocument


class Migration(migrations.Migration):
    dependencies = [("gitintegration", "0003_pull_request_comment_count")]

    operations = [AddSearchDocument("pullrequest", {"title": "A", "description": "B"})]
