from django.db import migrations

from collab.db.fulltext import AddSearchDocument


class Migration(migrations.Migration):
    dependencies = [("issues", "0002_comment_count")]

    operations = [AddSearchDocument("issue", {"title": "A", "description": "B"})]
